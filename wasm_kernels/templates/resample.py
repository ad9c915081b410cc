"""The resample family: one axis of a resize, y(outer, on, inner) = sum over taps of
weight * x(outer, index, inner), from tap-major (taps, on) tables of source rows and
weights.

When ``inner > 1`` registers run across ``inner`` (contiguous) with a scalar tail. When
``inner == 1`` (the last axis) registers run across the outputs instead: each lane loads
its own source float (wasm has no gather), and the tap-major tables hold a register of
weights per tap; a scalar tail covers ``on % lanes``.
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
        name: c.local("i32") for name in ("b", "o", "j", "t", "entry", "row_bytes",
                                          "tap_bytes")})
    # row_bytes = inner * 4; tap_bytes = on * 4 (from one tap's table row to the next)
    for name, size in (("row_bytes", "inner"), ("tap_bytes", "on")):
        f.get(size).emit("i32.const", 2).emit("i32.shl")
        f.set(name)
    f.count("b", "outer", 1, lambda: _plane(f))
    return FuncType(spec.param_types, spec.results), c


def _plane(f: NamedFrame) -> None:
    """One (n, inner) plane of x into one (on, inner) plane of y; then both advance."""
    c = f.c
    if f.isa.vector:
        f.get("inner").emit("i32.const", 1).emit("i32.eq").emit("if")
        f.count("o", "on", f.isa.lanes, lambda: _output_lanes(f))
        strided_loop(c, f.v["o"], 1, f.arg["on"], lambda: _output_row(f))
        c.emit("else")
    f.count("o", "on", 1, lambda: _output_row(f))
    if f.isa.vector:
        c.emit("end")
    # x += n * inner floats; y += on * inner floats
    for pointer, rows in (("x", "n"), ("y", "on")):
        f.get(pointer, rows, "row_bytes").emit("i32.mul").emit("i32.add")
        c.emit("local.set", f.arg[pointer])


def _first_entry(f: NamedFrame) -> None:
    """entry = o * 4: output ``o``'s byte offset in the first tap's row of both tables."""
    f.get("o").emit("i32.const", 2).emit("i32.shl")
    f.set("entry")


def _output_row(f: NamedFrame) -> None:
    """y row ``o`` = the weighted sum of its ``taps`` source rows, a register at a time."""
    c = f.c
    c.emit("i32.const", 0)
    f.set("j")
    for each in with_tail(f.isa):
        acc = c.local(each.valtype)

        def columns(each=each, acc=acc) -> None:
            each.const(c, 0.0)
            c.emit("local.set", acc)
            _first_entry(f)

            def tap() -> None:
                # x + index[entry] * row_bytes + 4j
                f.get("x", "index", "entry").emit("i32.add").emit("i32.load", 2, 0)
                f.get("row_bytes").emit("i32.mul").emit("i32.add")
                f.get("j").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
                each.load(c)
                f.get("weight", "entry").emit("i32.add")
                each.load_splat(c)
                each.madd_into(c, acc)
                f.add("entry", "tap_bytes")

            f.count("t", "taps", 1, tap)
            # y[o * inner + j] = acc
            f.get("y", "o", "row_bytes").emit("i32.mul").emit("i32.add")
            f.get("j").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.emit("local.get", acc)
            each.store(c)

        strided_loop(c, f.v["j"], each.lanes, f.arg["inner"], columns)


def _output_lanes(f: NamedFrame) -> None:
    """y[o:o + lanes] of a last-axis resample (inner == 1): lane l sums its taps' floats
    x[index[t, o + l]] times the register weight[t, o:o + lanes]."""
    c, isa = f.c, f.isa
    acc = c.local(isa.valtype)
    isa.const(c, 0.0)
    c.emit("local.set", acc)
    _first_entry(f)

    def tap() -> None:
        for lane in range(isa.lanes):
            # x[index[entry + 4 lane]] into lane ``lane`` (splat for the first)
            f.get("x", "index", "entry").emit("i32.add").emit("i32.load", 2, 4 * lane)
            c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("f32.load", 2, 0)
            c.emit("f32x4.splat" if lane == 0 else "f32x4.replace_lane",
                   *(() if lane == 0 else (lane,)))
        f.get("weight", "entry").emit("i32.add")
        isa.load(c)
        isa.madd_into(c, acc)
        f.add("entry", "tap_bytes")

    f.count("t", "taps", 1, tap)
    f.get("y", "o").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    c.emit("local.get", acc)
    isa.store(c)
