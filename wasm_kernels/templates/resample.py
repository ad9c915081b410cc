"""The resample family: one axis of a resize, y(outer, on, inner) = sum over taps of
weight * x(outer, index, inner), from per-output-row tables of source rows and weights.

Registers run across ``inner`` (contiguous) with a scalar tail; when ``inner == 1`` (the
last axis) every output is a scalar weighted sum of ``taps`` gathered floats.
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .isa import ISAS, NamedFrame
from .loops import strided_loop
from .rows import with_tail


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate ``f32_resample`` for ``isa_name``."""
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    f = NamedFrame(c, ISAS[isa_name], arg, (), {
        name: c.local("i32") for name in ("b", "o", "j", "t", "entry", "row_bytes")})
    # row_bytes = inner * 4
    f.get("inner").emit("i32.const", 2).emit("i32.shl")
    f.set("row_bytes")
    f.count("b", "outer", 1, lambda: _plane(f))
    return FuncType(spec.param_types, spec.results), c


def _plane(f: NamedFrame) -> None:
    """One (n, inner) plane of x into one (on, inner) plane of y; then both advance."""
    f.count("o", "on", 1, lambda: _output_row(f))
    # x += n * inner floats; y += on * inner floats
    for pointer, rows in (("x", "n"), ("y", "on")):
        f.get(pointer, rows, "row_bytes").emit("i32.mul").emit("i32.add")
        f.c.emit("local.set", f.arg[pointer])


def _output_row(f: NamedFrame) -> None:
    """y row ``o`` = the weighted sum of its ``taps`` source rows, a register at a time."""
    c = f.c
    c.emit("i32.const", 0)
    f.set("j")
    for each in with_tail(f.isa):
        acc = c.local(each.valtype)

        def columns(each=each, acc=acc) -> None:  # type: ignore[no-untyped-def]
            each.const(c, 0.0)
            c.emit("local.set", acc)
            # entry = (o * taps) * 4: the byte offset of this row's first tap in both tables
            f.get("o", "taps").emit("i32.mul").emit("i32.const", 2).emit("i32.shl")
            f.set("entry")

            def tap() -> None:
                # source = x + index[entry] * row_bytes + 4j
                f.get("x", "index", "entry").emit("i32.add").emit("i32.load", 2, 0)
                f.get("row_bytes").emit("i32.mul").emit("i32.add")
                f.get("j").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
                each.load(c)
                f.get("weight", "entry").emit("i32.add")
                each.load_splat(c)
                each.madd_into(c, acc)
                f.add("entry", 4)

            f.count("t", "taps", 1, tap)
            # y[o * inner + j] = acc
            f.get("y", "o", "row_bytes").emit("i32.mul").emit("i32.add")
            f.get("j").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.emit("local.get", acc)
            each.store(c)

        strided_loop(c, f.v["j"], each.lanes, f.arg["inner"], columns)
