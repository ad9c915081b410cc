"""The ``winograd`` family: the input and output transforms of Winograd F(2x2, 3x3) and
F(4x4, 3x3) (``winograd_input.py``, ``winograd_output.py``), each one call over all its
channels with a tile's arithmetic in registers, ``lanes`` adjacent tiles of a row at a time
(their columns apart by shuffles). Helpers both use: counted loops, sums of registers
weighted by a row of a transform, loads that are zero outside a row, and stores of only the
lanes inside it."""

from __future__ import annotations

from collections.abc import Callable

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .isa import ISAS, Isa


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate ``spec`` (an input or an output transform of ``abi_winograd``)."""
    from . import winograd_dilated, winograd_input, winograd_output

    c = Code(spec.param_types, names=[p.split(":")[0] for p in spec.params])
    dilated = "dilated" in spec.op
    body = ((winograd_dilated.input_body if dilated else winograd_input.body)
            if spec.op.endswith("input") else
            winograd_dilated.output_body if dilated else winograd_output.body)
    body(c, ISAS[isa_name], spec)
    return FuncType(spec.param_types, spec.results), c


def locals_(c: Code, valtype: str, *names: str) -> None:
    """Declare the named locals of ``valtype``."""
    for name in names:
        c.local(valtype, name)


def count(c: Code, name: str, limit: Callable[[], object], step: int,
          body: Callable[[], None]) -> None:
    """``for name in range(0, limit(), step)``: the last step may pass ``limit()``."""
    c.emit("i32.const", 0).set(name)
    with c.loop():
        c.get(name)
        limit()
        c.emit("i32.ge_u").emit("br_if", 1)
        body()
        c.get(name).emit("i32.const", step).emit("i32.add").set(name)


def pointer(c: Code, target: str, base: str, *terms: tuple[str | int, ...]) -> None:
    """``target = base + 4 * sum(product(term) for term in terms)`` (locals or constants)."""
    c.get(base)
    for term in terms:
        for k, factor in enumerate(term):
            if isinstance(factor, int):
                c.emit("i32.const", factor)
            else:
                c.get(factor)
            if k:
                c.emit("i32.mul")
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    c.set(target)


def linear(c: Code, isa: Isa, row: tuple[float, ...], values: list[int]) -> None:
    """Push ``sum(row[q] * values[q])``: the terms of positive weight first (a weight of 1
    or -1 is an add or a subtract), in order."""
    terms = sorted((q for q, k in enumerate(row) if k), key=lambda q: row[q] < 0)
    for n, q in enumerate(terms):
        c.get(values[q])
        if abs(row[q]) != 1:
            isa.const(c, abs(row[q]) if n else row[q])
            isa.op(c, "mul")
        elif n == 0 and row[q] < 0:
            isa.const(c, -1.0)
            isa.op(c, "mul")
        if n:
            isa.op(c, "add" if row[q] > 0 else "sub")


def shuffle(c: Code, first: str | int, second: str | int, lanes: tuple[int, ...]) -> None:
    """Push the f32 lanes ``lanes`` of ``first`` (0-3) and ``second`` (4-7)."""
    c.get(first, second).emit("i8x16.shuffle",
                              bytes(4 * lane + k for lane in lanes for k in range(4)))


def guarded_lanes(c: Code, isa: Isa, row: str, column: str, first: int, step: int,
                  limit: str) -> None:
    """Push a register whose lane ``l`` is the float at column ``column + first + step * l``
    of the row at ``row``, or 0 where that column is outside ``[0, limit)``."""
    for lane in range(isa.lanes):
        c.get(column).emit("i32.const", first + step * lane).emit("i32.add").set("at")
        c.get(row)
        c.get("at").emit("i32.const", 0).get("at", limit).emit("i32.lt_u").emit("select")
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("f32.load", 2, 0)
        c.emit("f32.const", 0.0).get("at", limit).emit("i32.lt_u").emit("select")
        if isa.vector:
            c.emit("f32x4.splat" if lane == 0 else "f32x4.replace_lane",
                   *(() if lane == 0 else (lane,)))


def guarded_store(c: Code, isa: Isa, value: int, row: str, column: str, first: int,
                  limit: str) -> None:
    """Store lane ``l`` of ``value`` at column ``column + first + l`` of the row at ``row``
    where that column is below ``limit``."""
    for lane in range(isa.lanes):
        c.get(column).emit("i32.const", first + lane).emit("i32.add").tee("at")
        c.get(limit).emit("i32.lt_u")
        with c.if_():
            c.get(row, "at").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.get(value)
            if isa.vector:
                c.emit("f32x4.extract_lane", lane)
            c.emit("f32.store", 2, 0)


def output_rows(c: Code, isa: Isa, at: tuple[tuple[float, ...], ...], mv: list[int],
                u: list[list[int]], bias: int) -> None:
    """``u(row, s) = A^T m`` along the rows of the (m + 2)^2 products at ``q`` (one position
    every ``kbytes``), the bias added to ``m(1, 1)``; ``mv`` holds a column of ``m``."""
    a = len(mv)
    for s in range(a):
        for r in range(a):
            c.get("q", "kbytes").emit("i32.const", a * r + s).emit("i32.mul")
            c.emit("i32.add")
            isa.load(c)
            if (r, s) == (1, 1):
                c.get(bias)
                isa.op(c, "add")
            c.set(mv[r])
        for row in range(len(u)):
            linear(c, isa, at[row], mv)
            c.set(u[row][s])


def each_plane(c: Code, row_of_tiles: Callable[[], None]) -> None:
    """``row_of_tiles`` for every row of tiles ``i`` of every input plane: channels outermost,
    images inside, with ``xplane`` at the plane and ``vbase`` at its first tile."""
    def channel() -> None:
        pointer(c, "xplane", "x", ("img", "cs", "h", "w"), ("ch", "h", "w"))
        pointer(c, "vbase", "v", ("ch", "count"), ("img", "th", "tw"))
        count(c, "i", lambda: c.get("th"), 1, row_of_tiles)

    count(c, "ch", lambda: c.get("c"), 1, lambda: count(c, "img", lambda: c.get("n"), 1,
                                                        channel))


def each_output_plane(c: Code, isa: Isa, bias: int, row_of_tiles: Callable[[], None],
                      residual: bool = False) -> None:
    """``row_of_tiles`` for every row of tiles ``i`` of every output plane: channels outermost,
    images inside, with ``mbase`` at the plane's first product, ``yplane`` (and ``rplane``
    when ``residual``) at its output (residual) plane and the channel's bias in ``bias``."""
    def channel() -> None:
        pointer(c, "mbase", "m", ("ch", "count"), ("img", "th", "tw"))
        pointer(c, "yplane", "y", ("img", "os", "oh", "ow"), ("ch", "oh", "ow"))
        if residual:
            pointer(c, "rplane", "r", ("img", "os", "oh", "ow"), ("ch", "oh", "ow"))
        c.get("bias", "ch").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        isa.load_splat(c)
        c.set(bias)
        count(c, "i", lambda: c.get("th"), 1, row_of_tiles)

    count(c, "ch", lambda: c.get("o"), 1, lambda: count(c, "img", lambda: c.get("n"), 1,
                                                        channel))
