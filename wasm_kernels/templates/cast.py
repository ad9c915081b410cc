"""The cast family: y[i] = convert(x[i]) between every pair of element dtypes, one element at
a time for every ISA (casts run on model inputs and masks, e.g. on token ids or pixels, never
in a hot loop).

An element is loaded into a wasm value (f32, i64, or i32 for every narrower integer and the
bool byte), converted between value types, and stored (a narrow store keeps the low bits).
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .loops import strided_loop

ACCESS: dict[str, tuple[str, str, str, int]] = {
    "float32": ("f32", "f32.load", "f32.store", 2),
    "int64": ("i64", "i64.load", "i64.store", 3),
    "int32": ("i32", "i32.load", "i32.store", 2),
    "int16": ("i32", "i32.load16_s", "i32.store16", 1),
    "uint16": ("i32", "i32.load16_u", "i32.store16", 1),
    "int8": ("i32", "i32.load8_s", "i32.store8", 0),
    "uint8": ("i32", "i32.load8_u", "i32.store8", 0),
    "bool": ("i32", "i32.load8_u", "i32.store8", 0),
}
"""Per element dtype: its wasm value type, load, store and log2 of its size in bytes. A
narrow integer loads sign- or zero-extended, so its i32 value is its value."""

_INT_MAX = 2 ** 31 - 1


def _convert(c: Code, source: str, target: str) -> None:
    """Turn the loaded value of ``source`` on the stack into the value ``target`` stores."""
    value, wanted = ACCESS[source][0], ACCESS[target][0]
    if target == "bool" or source == "bool":  # NOTE: any nonzero byte is true, as numpy's
        c.emit(f"{value}.const", 0.0 if value == "f32" else 0).emit(f"{value}.ne")
        value = "i32"
        if target == "bool":
            return
    if value == wanted:
        return
    if wanted == "f32":
        c.emit(f"f32.convert_{value}_s")
    elif value == "f32" and target in ("int32", "int64"):
        c.emit(f"{wanted}.trunc_sat_f32_s")
    elif value == "f32":
        # NOTE: x86's conversion (onnxruntime, numpy) gives the smallest int32 outside the
        # int32 range; trunc_sat gives the largest for a large positive x: step it by one,
        # wrapping to the smallest, whose low 8 and 16 bits are 0 as well.
        scratch = c.local("i32")
        c.emit("i32.trunc_sat_f32_s").emit("local.tee", scratch)
        c.emit("local.get", scratch).emit("i32.const", _INT_MAX).emit("i32.eq").emit("i32.add")
    elif wanted == "i64":
        c.emit("i64.extend_i32_s")
    else:
        c.emit("i32.wrap_i64")


def _element(c: Code, base: int, i: int, log2_size: int) -> None:
    """Push ``base + (i << log2_size)``."""
    c.emit("local.get", base).emit("local.get", i)
    if log2_size:
        c.emit("i32.const", log2_size).emit("i32.shl")
    c.emit("i32.add")


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate cast kernel ``spec`` (the same code for every ISA)."""
    source, target = spec.dtypes
    _, load, _, load_size = ACCESS[source]
    _, _, store, store_size = ACCESS[target]
    c = Code(spec.param_types)
    x, y, n = range(3)
    i = c.local("i32")
    c.emit("i32.const", 0).emit("local.set", i)

    def body() -> None:
        _element(c, y, i, store_size)
        _element(c, x, i, load_size)
        c.emit(load, load_size)
        _convert(c, source, target)
        c.emit(store, store_size)

    strided_loop(c, i, 1, n, body)
    return FuncType(spec.param_types, spec.results), c
