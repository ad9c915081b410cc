"""The last pixels of a pointwise conv's part, one at a time (``columns``).

``f32_conv2d_gemm`` reads a pointwise conv's input planes in place as the dense tile's B
(``conv_pointwise``), 8 pixels a panel. Past the last whole panel the linear driver ends with
a tile of 4 or 8 pixels ending at the last one, which costs what a whole panel costs: its
5 rows' broadcasts of the weight bound the shuffle port, however narrow it is. On a 7x7
plane (49 pixels: 6 panels and one pixel) that was 7 panels' time for 6.1 panels of work.

Here each of those pixels is a matrix-vector product against the tiles of the weight as the
driver packed them (``pack_im2col.tiles``): a tile's ``GROUP`` step-major rows are one
register per step, multiplied by the pixel's value in every lane, and a row read in place (a
tile's fifth, or a single row) is broadcast into a register of its own. ``TILES`` tiles run
at once, so their accumulators are enough independent chains of multiply-adds for the FMA
latency. Every output is the same chain of multiply-adds over k, in the same order, as in the
dense tile, and the same epilogue in the same lanes' arithmetic, so a pixel's values do not
depend on which path computed it (a thread's part may end anywhere).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from ..pack_im2col import ROWS
from . import activations
from .dense_store import row_address
from .dense_tile import GROUP
from .isa import Isa
from .loops import strided_loop

if TYPE_CHECKING:
    from .linear import _Frame

NARROW = 3
"""Pixels past the last whole panel up to which ``columns`` computes them (one by one) instead
of the driver's end tile: each costs about a quarter of a panel's time."""

TILES = 4
"""Tiles of the weight one pass over k runs at once: 4 tiles of 5 rows keep 8 multiply-add
chains, what two FMA pipes of 4 cycles' latency need."""

UNROLL = 8
"""Steps of k per loop iteration."""


def columns(f: _Frame) -> None:
    """Pixels ``j .. n`` of C, one at a time, against the block's rows ``ib .. iend`` in the
    driver's tiles (``ROWS`` rows up to ``split``, then ``GROUP``, then single rows); ``j``
    ends at ``n``."""
    c = f.c
    if "bias" in f.arg:
        raise ValueError("conv columns: a bias per column (a linear's) is not supported")
    with c.loop():
        c.get(f.j, f.arg["n"]).emit("i32.ge_u").emit("br_if", 1)
        c.get(f.ib).set(f.i)
        for rows, end in ((ROWS, f.split), (GROUP, f.iend), (1, f.iend)):
            for tiles in (TILES, 1):
                strided_loop(c, f.i, rows * tiles, end, partial(_column, f, rows, tiles))
        c.get(f.j).emit("i32.const", 1).emit("i32.add").set(f.j)


def _column(f: _Frame, rows: int, tiles: int) -> None:
    """Pixel ``j`` of rows ``i .. i + rows * tiles`` of C: ``tiles`` tiles of ``rows``."""
    c, isa, arg, ldb = f.c, f.isa, f.arg, f.ldb
    assert ldb is not None, "columns read B in place"
    # (pointer, first row, packed): each tile's packed group, then a row read in place
    parts: list[tuple[int, int, bool]] = []
    for t in range(tiles):
        first = rows * t
        rest = [(first, True), (first + GROUP, False)] if rows == ROWS else (
            [(first, True)] if rows == GROUP else [(first, False)])
        for row, packed in rest:
            pointer = c.local("i32")
            row_address(c, arg["a"], f.i, row, f.lda)
            c.set(pointer)
            parts.append((pointer, row, packed))
    acc = [c.local(isa.valtype) for _ in parts]
    x, pb, steps = c.local(isa.valtype), c.local("i32"), c.local("i32")
    for register in acc:
        isa.const(c, 0.0)
        c.set(register)
    c.get(arg["w"], f.j).emit("i32.const", 2).emit("i32.shl").emit("i32.add").set(pb)

    def step(u: int) -> None:
        c.get(pb)
        isa.load_splat(c)
        c.set(x)
        c.get(pb, ldb).emit("i32.add").set(pb)
        for (pointer, _, packed), register in zip(parts, acc):
            c.get(pointer)
            if packed:
                isa.load(c, 4 * GROUP * u)
            else:
                isa.load_splat(c, 4 * u)
            c.get(x)
            isa.madd_into(c, register)

    def advance(count: int) -> None:
        for pointer, _, packed in parts:
            c.get(pointer).emit("i32.const", 4 * (GROUP if packed else 1) * count)
            c.emit("i32.add").set(pointer)

    for count, shift in ((UNROLL, UNROLL.bit_length() - 1), (1, 0)):
        # k // UNROLL iterations of UNROLL steps, then k % UNROLL of one
        c.get(arg["k"])
        if count > 1:
            c.emit("i32.const", shift).emit("i32.shr_u")
        else:
            c.emit("i32.const", UNROLL - 1).emit("i32.and")
        c.tee(steps)
        with c.if_():
            # entered when the count is not 0, tested at the bottom
            c.emit("loop")
            for u in range(count):
                step(u)
            advance(count)
            c.get(steps).emit("i32.const", 1).emit("i32.sub").tee(steps).emit("br_if", 0)
            c.emit("end")
    for (_, row, packed), register in zip(parts, acc):
        _store(f, isa, register, row, GROUP if packed else 1)


def _store(f: _Frame, isa: Isa, register: int, row: int, count: int) -> None:
    """Rows ``i + row .. i + row + count`` of pixel ``j`` (one per lane of ``register``, or
    lane 0 for one row): the epilogue as the dense tile applies it to each, then the stores."""
    c, arg = f.c, f.arg
    c.get(register)
    if "row_bias" in arg:
        c.get(arg["row_bias"], f.i).emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        if count == GROUP:
            isa.load(c, 4 * row)
        else:
            isa.load_splat(c, 4 * row)
        isa.op(c, "add")
    if "r" in arg:
        for lane in range(count):
            _address(f, arg["r"], row + lane)
            c.emit("f32.load", 2, 0)
            if lane == 0:
                isa.splat(c)
            else:
                c.emit("f32x4.replace_lane", lane)
        isa.op(c, "add")
    for op in f.epilogue:
        activations.apply(c, isa, op)
    c.set(register)
    for lane in range(count):
        _address(f, arg["c"], row + lane)
        c.get(register).emit("f32x4.extract_lane", lane).emit("f32.store", 2, 0)


def _address(f: _Frame, base: int, row: int) -> None:
    """Push ``base + (i + row) * ldc + j * 4``: pixel ``j`` of that row of C (or R)."""
    row_address(f.c, base, f.i, row, f.ldc)
    f.c.get(f.j).emit("i32.const", 2).emit("i32.shl").emit("i32.add")
