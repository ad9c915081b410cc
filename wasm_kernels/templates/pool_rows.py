"""Max pool rows as column maxima first: the fast paths of ``f32_max_pool2d``.

Vector ISAs (``fast_rows``): for a window of ``kh`` in 1..5 rows at dilation 1, each v128
of input columns is folded over the window's rows (``vertical``), and the window's column
taps of four outputs are then shuffles of those column maxima (stride 1: lanes s..s+3 of
two registers; stride 2: the even and odd lanes of two, and for a third tap the even lanes
moved on by one). A 3x3/2 block loads six registers (its last is the next block's first)
and shuffles four where tap by tap it loaded eighteen and shuffled nine. The row's last
four outputs are one more block, its registers past the row's end the last four columns
shuffled beside -inf. The scalar ISA (``scalar_rows``) folds a window inside the row as
straight-line loads with no bounds test.

A row of the window outside the input is replaced by the nearest row inside it: the max of
a row twice is the max of it once, so the padding needs no test in the block (max only).
The block folds with ``pmax`` (one instruction; ``f32x4.max`` is eight) and sums every
column it reads: where that sum is NaN (a NaN read, or +inf beside -inf) the loop stops
before storing, and the general row (``pool._vector_row``: NaN masks per tap) finishes the
output row, so NaNs propagate as with the scalar ``f32.max``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from ..wasm import Code
from .conv_tiles import EVEN_LANES, ODD_LANES
from .isa import Isa

SHAPES: tuple[tuple[int, int], ...] = ((1, 1), (1, 2), (1, 3), (1, 4), (1, 5),
                                      (2, 1), (2, 2), (2, 3))
"""The (column stride, kernel columns) of the fast blocks: up to two v128 of columns at
stride 1, three at stride 2."""

NEG_INF = struct.pack("<f", -math.inf) * 4
"""-inf in every lane: the columns past the row."""

ROWS = (1, 2, 3, 4, 5)
"""Kernel rows of the fast blocks (5: the row pass of a separable 5x5 SPPF pool)."""


def _lanes(*lanes: int) -> bytes:
    """The ``i8x16.shuffle`` picking these f32 lanes of two registers (0-3, then 4-7)."""
    return bytes(4 * lane + byte for lane in lanes for byte in range(4))


def _registers(stride: int, kw: int) -> int:
    """v128s of columns one block of four outputs reads."""
    return -(-(3 * stride + kw) // 4)


def fast_rows(c: Code, isa: Isa, output: Callable[[], None]) -> None:
    """Continue the output row at ``ox`` with four-output blocks where the window has
    ``kh`` in ``ROWS``, dilation 1 and (``sw``, ``kw``) in ``SHAPES``; leaves ``ox`` at the
    first output not done (the caller's general row finishes it). Outputs left of the
    first whole window (``ox * sw < pw``) go one by one through ``output()``."""
    arg, get = c.names, c.get
    row_ptrs = [c.local("i32") for _ in ROWS]
    at = c.local("i32")
    regs = [c.local("v128") for _ in range(3)]
    sums = [c.local("v128") for _ in range(3)]
    total, value, acc = (c.local("v128") for _ in range(3))
    past, tail = c.local("i32"), c.local("i32")

    def vertical(kh: int, k: int, base: int | None = None) -> None:
        """``regs[k]`` = the max over the window's rows of the v128 at ``at + 16 k`` (or at
        ``base``); ``sums[k]`` their sum."""
        for i in range(kh):
            get(row_ptrs[i], at if base is None else base).emit("i32.add")
            isa.load(c, 16 * k if base is None else 0)
            if i == 0:
                c.emit("local.tee", regs[k]).emit("local.set", sums[k])
                continue
            c.emit("local.tee", value).emit("local.get", sums[k]).emit("f32x4.add")
            c.emit("local.set", sums[k])
            get(regs[k], value).emit("f32x4.pmax").emit("local.set", regs[k])

    def block(kh: int, stride: int, kw: int, carried: bool, exit_: int,
              edge: bool = False) -> None:
        """Four outputs; ``br_if exit_`` first if a NaN may be in reach. At the ``edge``, a
        register reaching past the row is the row's last four columns moved into place,
        -inf where past the row (the max's identity)."""
        count = _registers(stride, kw)
        for k in range(1 if carried else 0, count):
            if edge:
                edge_register(kh, k)
            else:
                vertical(kh, k)
        # the sum of every column read is NaN if one is (or if +inf meets -inf): the general
        # row then finishes the output row, NaN-exact
        get(sums[0])
        for k in range(1, count):
            get(sums[k]).emit("f32x4.add")
        c.emit("local.tee", total).emit("local.get", total).emit("f32x4.ne")
        c.emit("v128.any_true").emit("br_if", exit_)
        for j in range(kw):
            _tap(c, regs, stride, j)
            if j:
                get(acc).emit("f32x4.pmax")
            c.emit("local.set", acc)
        get(arg["out"], acc)
        isa.store(c)
        if carried:
            get(regs[count - 1]).emit("local.set", regs[0])
            get(sums[count - 1]).emit("local.set", sums[0])

    def edge_register(kh: int, k: int) -> None:
        """``vertical`` at the edge: columns past = (at + 16 (k + 1) - row) / 4."""
        get(at).emit("i32.const", 16 * (k + 1)).emit("i32.add").emit("local.get", arg["row"])
        c.emit("i32.sub").emit("i32.const", 2).emit("i32.shr_s").emit("local.tee", past)
        c.emit("i32.const", 0).emit("i32.gt_s").emit("if")
        get(arg["row"]).emit("i32.const", 16).emit("i32.sub").emit("local.set", tail)
        vertical(kh, k, tail)
        for shift in (1, 2, 3):
            get(past).emit("i32.const", shift).emit("i32.eq").emit("if")
            get(regs[k]).emit("v128.const", NEG_INF)
            c.emit("i8x16.shuffle", _lanes(*range(shift, shift + 4)))
            c.emit("local.set", regs[k]).emit("else")
        c.emit("v128.const", NEG_INF).emit("local.set", regs[k])
        c.emit("end").emit("end").emit("end")
        c.emit("else")
        vertical(kh, k)
        c.emit("end")

    def fits(stride: int, kw: int) -> None:
        """Push whether a block fits at ``ox``: four outputs left in the row and its
        registers inside the input row (``at`` = (ox * sw - pw) * 4)."""
        get(arg["ox"]).emit("i32.const", 4).emit("i32.add").emit("local.get", arg["ow"])
        c.emit("i32.le_u")
        get(arg["ox"]).emit("i32.const", stride).emit("i32.mul").emit("local.get", arg["pw"])
        c.emit("i32.sub").emit("i32.const", 2).emit("i32.shl").emit("local.tee", at)
        c.emit("i32.const", 16 * _registers(stride, kw)).emit("i32.add")
        get(arg["row"]).emit("i32.le_s").emit("i32.and")

    def loop(kh: int, stride: int, kw: int) -> None:
        # a block's last register is the next one's first when they overlap by one
        carried = _registers(stride, kw) == stride + 1
        c.emit("block")  # a NaN in reach leaves it
        if carried:
            fits(stride, kw)
            c.emit("if")
            vertical(kh, 0)
            c.emit("end")
        with c.loop():
            fits(stride, kw)
            c.emit("i32.eqz").emit("br_if", 1)
            block(kh, stride, kw, carried, 2)
            get(arg["out"]).emit("i32.const", 16).emit("i32.add").emit("local.set", arg["out"])
            get(arg["ox"]).emit("i32.const", 4).emit("i32.add").emit("local.set", arg["ox"])
        # the last four outputs as one block when at most four are left and their first
        # column is inside the row (ox and out move back to them)
        get(arg["ox"], arg["ow"]).emit("i32.lt_u")
        get(arg["ox"]).emit("i32.const", 4).emit("i32.add").emit("local.get", arg["ow"])
        c.emit("i32.ge_u").emit("i32.and")
        get(arg["ow"]).emit("i32.const", 4).emit("i32.sub").emit("local.tee", past)
        c.emit("i32.const", stride).emit("i32.mul").emit("local.get", arg["pw"]).emit("i32.sub")
        c.emit("i32.const", 2).emit("i32.shl").emit("local.tee", at)
        c.emit("i32.const", 0).emit("i32.ge_s").emit("i32.and")
        get(arg["w"]).emit("i32.const", 4).emit("i32.ge_s").emit("i32.and")
        get(past).emit("i32.const", 0).emit("i32.ge_s").emit("i32.and").emit("if")
        get(arg["out"], arg["ox"], past).emit("i32.sub").emit("i32.const", 2)
        c.emit("i32.shl").emit("i32.sub").emit("local.set", arg["out"])
        get(past).emit("local.set", arg["ox"])
        block(kh, stride, kw, False, 1, edge=True)
        get(arg["out"]).emit("i32.const", 16).emit("i32.add").emit("local.set", arg["out"])
        get(arg["ow"]).emit("local.set", arg["ox"])
        c.emit("end").emit("end")

    _window_rows(c, row_ptrs, output)
    get(arg["dh"]).emit("i32.const", 1).emit("i32.eq")
    get(arg["dw"]).emit("i32.const", 1).emit("i32.eq").emit("i32.and").emit("if")
    for kh in ROWS:
        get(arg["kh"]).emit("i32.const", kh).emit("i32.eq").emit("if")
        for stride, kw in SHAPES:
            get(arg["sw"]).emit("i32.const", stride).emit("i32.eq")
            get(arg["kw"]).emit("i32.const", kw).emit("i32.eq").emit("i32.and").emit("if")
            loop(kh, stride, kw)
            c.emit("end")
        c.emit("end")
    c.emit("end")


def scalar_rows(c: Code, output: Callable[[], None]) -> None:
    """The scalar ISA's ``fast_rows``: one output at a time, but where the window lies
    inside the row its ``kh * kw`` taps (``kh`` in ``ROWS``, ``kw`` up to 5, dilation 1)
    are straight-line loads folded by ``f32.max``, with no bounds test; the rows outside
    the input are the nearest inside (as ``fast_rows``)."""
    arg, get = c.names, c.get
    row_ptrs = [c.local("i32") for _ in ROWS]
    at, acc = c.local("i32"), c.local("f32")
    _window_rows(c, row_ptrs, output)
    get(arg["dh"]).emit("i32.const", 1).emit("i32.eq")
    get(arg["dw"]).emit("i32.const", 1).emit("i32.eq").emit("i32.and").emit("if")
    for kh in ROWS:
        for kw in range(1, 6):
            get(arg["kh"]).emit("i32.const", kh).emit("i32.eq")
            get(arg["kw"]).emit("i32.const", kw).emit("i32.eq").emit("i32.and").emit("if")
            with c.loop():
                # at = (ox * sw - pw) * 4; stop where the window reaches past the row
                get(arg["ox"], arg["ow"]).emit("i32.ge_u").emit("br_if", 1)
                get(arg["ox"], arg["sw"]).emit("i32.mul").emit("local.get", arg["pw"])
                c.emit("i32.sub").emit("i32.const", 2).emit("i32.shl").emit("local.tee", at)
                c.emit("i32.const", 4 * kw).emit("i32.add").emit("local.get", arg["row"])
                c.emit("i32.gt_s").emit("br_if", 1)
                for i in range(kh):
                    for j in range(kw):
                        get(row_ptrs[i], at).emit("i32.add").emit("f32.load", 2, 4 * j)
                        if i or j:
                            get(acc).emit("f32.max")
                        c.emit("local.set", acc)
                get(arg["out"], acc).emit("f32.store", 2)
                get(arg["out"]).emit("i32.const", 4).emit("i32.add").emit("local.set", arg["out"])
                get(arg["ox"]).emit("i32.const", 1).emit("i32.add").emit("local.set", arg["ox"])
            c.emit("end")
    c.emit("end")


def _window_rows(c: Code, row_ptrs: list[int], output: Callable[[], None]) -> None:
    """Set ``row_ptrs`` to the window's rows (oy * sh - ph + i) clamped into the input,
    then run ``output()`` one by one left of the first whole window (ox * sw < pw)."""
    arg, get = c.names, c.get
    for i, ptr in enumerate(row_ptrs):
        get(arg["oy"], arg["sh"]).emit("i32.mul").emit("local.get", arg["ph"]).emit("i32.sub")
        c.emit("i32.const", i).emit("i32.add").emit("local.tee", arg["ih"])
        c.emit("i32.const", 0).emit("local.get", arg["ih"]).emit("i32.const", 0)
        c.emit("i32.gt_s").emit("select").emit("local.tee", arg["ih"])
        get(arg["h"]).emit("i32.const", 1).emit("i32.sub").emit("local.tee", arg["iw"])
        get(arg["ih"], arg["iw"]).emit("i32.lt_s").emit("select")
        get(arg["row"]).emit("i32.mul").emit("local.get", arg["xp"]).emit("i32.add")
        c.emit("local.set", ptr)
    with c.loop():
        get(arg["ox"], arg["ow"]).emit("i32.ge_u").emit("br_if", 1)
        get(arg["ox"], arg["sw"]).emit("i32.mul").emit("local.get", arg["pw"])
        c.emit("i32.ge_s").emit("br_if", 1)
        output()
        get(arg["ox"]).emit("i32.const", 1).emit("i32.add").emit("local.set", arg["ox"])


def _tap(c: Code, regs: list[int], stride: int, j: int) -> None:
    """Push tap ``j`` of four outputs: columns j, j + s, j + 2s, j + 3s of the block."""
    if stride == 1:
        if j in (0, 4):
            c.emit("local.get", regs[j // 4])
        else:
            c.get(regs[0], regs[1]).emit("i8x16.shuffle", _lanes(*range(j, j + 4)))
    elif j < 2:
        c.get(regs[0], regs[1]).emit("i8x16.shuffle", EVEN_LANES if j == 0 else ODD_LANES)
    else:
        c.get(regs[0], regs[1]).emit("i8x16.shuffle", EVEN_LANES)
        c.emit("local.get", regs[2]).emit("i8x16.shuffle", _lanes(1, 2, 3, 4))
