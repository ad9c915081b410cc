"""The cast family: y[i] = convert(x[i]) between float32, int64 and bool, one element at a
time for every ISA (casts run once per model input, e.g. on token ids, never in a hot loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .loops import strided_loop


@dataclass(frozen=True)
class Conversion:
    """How one cast loads an element, converts it, and stores the result."""

    load: tuple[str, int]
    """The load instruction and log2 of the element size in bytes."""
    convert: tuple[tuple[object, ...], ...]
    """Instructions (name, immediates...) that turn the loaded value into the stored one."""
    store: tuple[str, int]


CONVERSIONS: dict[str, Conversion] = {
    "i64_to_f32": Conversion(("i64.load", 3), (("f32.convert_i64_s",),), ("f32.store", 2)),
    "f32_to_i64": Conversion(("f32.load", 2), (("i64.trunc_sat_f32_s",),), ("i64.store", 3)),
    # NOTE: any nonzero byte is true, as numpy reads a bool.
    "bool_to_f32": Conversion(("i32.load8_u", 0), (("i32.const", 0), ("i32.ne",),
                                                   ("f32.convert_i32_u",)), ("f32.store", 2)),
    "i64_to_bool": Conversion(("i64.load", 3), (("i64.const", 0), ("i64.ne",)),
                              ("i32.store8", 0)),
    "i32_to_f32": Conversion(("i32.load", 2), (("f32.convert_i32_s",),), ("f32.store", 2)),
    "f32_to_i32": Conversion(("f32.load", 2), (("i32.trunc_sat_f32_s",),), ("i32.store", 2)),
    "i32_to_i64": Conversion(("i64.load32_s", 2), (), ("i64.store", 3)),
    "i64_to_i32": Conversion(("i64.load", 3), (("i32.wrap_i64",),), ("i32.store", 2)),
    "bool_to_i32": Conversion(("i32.load8_u", 0), (("i32.const", 0), ("i32.ne",)),
                              ("i32.store", 2)),
    "bool_to_i64": Conversion(("i32.load8_u", 0), (("i32.const", 0), ("i32.ne",),
                                                   ("i64.extend_i32_u",)), ("i64.store", 3)),
    "i32_to_bool": Conversion(("i32.load", 2), (("i32.const", 0), ("i32.ne",)),
                              ("i32.store8", 0)),
    "f32_to_bool": Conversion(("f32.load", 2), (("f32.const", 0.0), ("f32.ne",)),
                              ("i32.store8", 0)),
}


def _element(c: Code, base: int, i: int, log2_size: int) -> None:
    """Push ``base + (i << log2_size)``."""
    c.emit("local.get", base).emit("local.get", i)
    if log2_size:
        c.emit("i32.const", log2_size).emit("i32.shl")
    c.emit("i32.add")


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate cast kernel ``spec`` (the same code for every ISA)."""
    conversion = CONVERSIONS[spec.op]
    c = Code(spec.param_types)
    x, y, n = range(3)
    i = c.local("i32")
    c.emit("i32.const", 0).emit("local.set", i)

    def body() -> None:
        _element(c, y, i, conversion.store[1])
        _element(c, x, i, conversion.load[1])
        c.emit(conversion.load[0], conversion.load[1])
        for op, *immediates in conversion.convert:
            c.emit(str(op), *immediates)
        c.emit(conversion.store[0], conversion.store[1])

    strided_loop(c, i, 1, n, body)
    return FuncType(spec.param_types, spec.results), c
