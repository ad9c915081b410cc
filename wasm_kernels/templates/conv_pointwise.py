"""The pointwise convs of ``f32_conv2d_gemm``: a 1x1 conv without padding is a gemm ``Y[o, p]
= W[o, ci] @ X[ci, p]`` whose B needs no packing. At stride 1 the input planes are B as they
are: one row of ``h * w`` pixels (``flatten``), read in place by the linear driver with the
plane as B's row stride (``in_place``). At a larger stride the kernel first copies the
pixels it computes (``first0 .. end``) of each of the group's planes, subsampled, into the
scratch ``xp`` (``subsample``), then multiplies those planes the same way. The pixels past
the last whole panel of ``PANEL`` are one more tile ending at the last pixel (``TAIL`` or
``PANEL`` wide, see ``linear.row_blocks``), so no load passes the input's end; only planes
(or a thread's part) of fewer than ``PANEL`` pixels go through ``im2col``'s packing. On a
chunk of ``POINT_PIXELS`` pixels or more the driver's row blocks are ``POINT_ROWS`` output
channels: each block sweeps the chunk's panels (the chunk's input stays in L2 while the blocks
pass), writing (and reading the residual of) a few planes at a time. A conv with one output
channel per group goes plane by plane instead (``conv_one_row``).

The functions read the conv's arguments and the locals of ``conv_gemm`` and ``im2col`` by
name from the ``Code``; ``declare`` adds the locals they use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..pack import PANEL
from ..pack_im2col import ROWS
from ..wasm import Code
from . import conv_one_row
from .conv_tiles import EVEN_LANES
from .isa import Isa
from .linear import _Frame

POINT_ROWS = 2 * ROWS
"""Output channels per row block of the linear driver on a chunk of ``POINT_PIXELS`` or more
(a multiple of ``ROWS``, so the weight's packed tiles are the same, ``pack_im2col.tiles``).
With every channel in one block, each panel of 8 pixels wrote all output planes (and read
all residual planes) before the next: one process, row blocks of 10 over one block (21
rounds, load 6-9, relaxed): open_nsfw 32->128 @56 with add+relu 1.06-1.38x, 64->256 @28
add+relu 1.17x, ddddocr 48->24 and 48->48 @104 with silu 1.11x and 1.13x, 96->96 @52
1.04-1.06x; 1024->256, 256->1024 and 320->1280 @7 0.95-0.98x (so not under POINT_PIXELS);
@14 and N = 52-480 even."""

POINT_PIXELS = 256
"""Pixels of a chunk from which its row blocks are ``POINT_ROWS`` channels."""

_LOCALS = ("flat", "sub", "bplane", "src_row", "src_col", "sub_ow", "sub_ci", "sub_p",
           "sub_src", "sub_dst", "sub_run", "sub_sbase", "sub_dbase", "sub_len")


def declare(c: Code) -> None:
    """Declare the locals the pointwise path uses (all i32)."""
    for name in _LOCALS:
        c.local("i32", name)


def flatten(c: Code) -> None:
    """A 1x1 conv without padding (``flat``) becomes one row of ``oh * ow`` pixels at stride 1
    (oh = 1, ow = oh * ow, and likewise h and w); ``bplane`` is B's row stride in bytes: the
    input plane, or at a larger stride (``sub``) the subsampled plane in ``xp``, whose input
    row and pixel strides ``subsample`` keeps in ``src_row`` and ``src_col``."""
    c.get("kh", "kw").emit("i32.or").emit("i32.const", 1).emit("i32.eq")
    c.get("ph", "pw").emit("i32.or").emit("i32.eqz").emit("i32.and").tee("flat")
    with c.if_():
        c.get("sh", "sw").emit("i32.or").emit("i32.const", 1).emit("i32.ne").tee("sub")
        with c.if_():
            c.get("sh", "w").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").set("src_row")
            c.get("sw").emit("i32.const", 2).emit("i32.shl").set("src_col")
            c.get("ow").set("sub_ow")
            c.get("oh").set("h")
            c.get("ow").set("w")
            c.emit("i32.const", 1).tee("sh").set("sw")
        for rows, columns in (("h", "w"), ("oh", "ow")):
            c.get(rows, columns).emit("i32.mul").set(columns)
            c.emit("i32.const", 1).set(rows)
    c.get("w").emit("i32.const", 2).emit("i32.shl").set("bplane")


def subsample(c: Code, isa: Isa) -> None:
    """With ``sub``, copy pixels ``first0 .. end`` of the group's ``cg`` input planes at
    ``xg`` (``iplane`` bytes each), every ``src_col / 4``-th pixel of every ``src_row / 4``-th
    row, to ``xp`` (planes of ``bplane`` bytes, each pixel at its own index, so parts of the
    pixels write disjoint bytes) and point ``xg`` there. At stride 2 four pixels are two
    loads and a shuffle while the row has five more (so the loads stay inside it)."""
    c.get("sub")
    with c.if_():
        c.get("first0").set("sub_p")
        with c.loop():
            c.get("sub_p", "end").emit("i32.ge_u").emit("br_if", 1)
            _row_run(c, isa)
        c.get("xp").set("xg")


def _row_run(c: Code, isa: Isa) -> None:
    """Copy the pixels from ``sub_p`` to the end of its output row (or to ``end``) in every
    plane, their offsets found once (a division per row, not per row and plane); ``sub_p``
    moves past them."""
    # sub_sbase = xg + (p / sub_ow) * src_row + (p % sub_ow) * src_col; sub_dbase = xp + p * 4
    c.get("xg", "sub_p", "sub_ow").emit("i32.div_u").get("src_row").emit("i32.mul")
    c.emit("i32.add").get("sub_p", "sub_ow").emit("i32.rem_u").tee("sub_len")
    c.get("src_col").emit("i32.mul").emit("i32.add").set("sub_sbase")
    c.get("xp", "sub_p").emit("i32.const", 2).emit("i32.shl").emit("i32.add").set("sub_dbase")
    # sub_len = min(sub_ow - p % sub_ow, end - p)
    c.get("sub_ow", "sub_len").emit("i32.sub").set("sub_len")
    c.get("end", "sub_p").emit("i32.sub").get("sub_len", "end", "sub_p").emit("i32.sub")
    c.get("sub_len").emit("i32.lt_u").emit("select").set("sub_len")
    c.get("sub_p", "sub_len").emit("i32.add").set("sub_p")

    def advance(pixels: int, src_bytes: Callable[[], object]) -> None:
        c.get("sub_run").emit("i32.const", pixels).emit("i32.sub").set("sub_run")
        c.get("sub_dst").emit("i32.const", 4 * pixels).emit("i32.add").set("sub_dst")
        c.get("sub_src")
        src_bytes()
        c.emit("i32.add").set("sub_src")

    def four() -> None:
        c.get("sub_dst", "sub_src").emit("v128.load", 2, 0).get("sub_src")
        c.emit("v128.load", 2, 16).emit("i8x16.shuffle", EVEN_LANES).emit("v128.store", 2, 0)
        advance(4, lambda: c.emit("i32.const", 32))

    def one() -> None:
        c.get("sub_dst", "sub_src").emit("f32.load", 2, 0).emit("f32.store", 2, 0)
        advance(1, lambda: c.get("src_col"))

    c.emit("i32.const", 0).set("sub_ci")
    with c.loop():
        c.get("sub_ci", "cg").emit("i32.ge_u").emit("br_if", 1)
        c.get("sub_sbase").set("sub_src")
        c.get("sub_dbase").set("sub_dst")
        c.get("sub_len").set("sub_run")
        if isa.vector:
            c.get("src_col").emit("i32.const", 8).emit("i32.eq")
            with c.if_():
                _while(c, lambda: c.get("sub_run").emit("i32.const", 4).emit("i32.le_u"), four)
        _while(c, lambda: c.get("sub_run").emit("i32.eqz"), one)
        c.get("sub_sbase", "iplane").emit("i32.add").set("sub_sbase")
        c.get("sub_dbase", "bplane").emit("i32.add").set("sub_dbase")
        c.get("sub_ci").emit("i32.const", 1).emit("i32.add").set("sub_ci")


def _while(c: Code, done: Callable[[], object], body: Callable[[], None]) -> None:
    """``while not done(): body()``."""
    with c.loop():
        done()
        c.emit("br_if", 1)
        body()


def in_place(c: Code, f: _Frame, multiply: Callable[[_Frame], None]) -> None:
    """With ``flat`` and a panel of pixels or more, ``multiply(frame)`` pixels ``first ..
    end``, at most ``columns`` at a time (the last chunk at least a panel: the driver ends it
    with a tile of its last pixels), with ``cols`` pointing at their first pixel in the input
    planes at ``xg`` (B in place); ``frame`` is ``f`` with row blocks of ``POINT_ROWS`` on a
    chunk of ``POINT_PIXELS`` or more; ``multiply`` moves ``first`` past the ``count``
    pixels."""
    point = dataclasses.replace(f, mb=c.local("i32"))
    c.get("flat", "end", "first").emit("i32.sub").emit("i32.const", PANEL).emit("i32.ge_u")
    c.emit("i32.and")
    with c.if_():
        c.get("og").emit("i32.const", 1).emit("i32.eq")
        with c.if_():
            conv_one_row.row(c, f.isa, f.epilogue)
        with c.loop():
            c.get("first", "end").emit("i32.ge_u").emit("br_if", 1)
            # count = columns if columns + PANEL <= end - first, else end - first
            c.get("columns", "end", "first").emit("i32.sub").tee("count")
            c.get("columns").emit("i32.const", PANEL).emit("i32.add").get("count")
            c.emit("i32.le_u").emit("select").set("count")
            c.get("xg", "first").emit("i32.const", 2).emit("i32.shl").emit("i32.add").set("cols")
            # point.mb = count >= POINT_PIXELS ? min(f.mb, POINT_ROWS) : f.mb
            c.get(f.mb).emit("i32.const", POINT_ROWS).get(f.mb).emit("i32.const", POINT_ROWS)
            c.emit("i32.lt_u").emit("select").get(f.mb)
            c.get("count").emit("i32.const", POINT_PIXELS).emit("i32.ge_u").emit("select")
            c.set(point.mb)
            multiply(point)
