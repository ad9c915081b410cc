"""The padded copy of a conv's input (``im2col``): the group's ``cg`` input planes from ``xin``
into the scratch ``xp`` inside their zero borders, so that every tap of every output pixel is a
plain load; chunk by chunk, the rows a chunk reads first just before it is packed (``rows``),
each where it lies in the whole padded input. The channels' rows interleave there: padded
row ``y`` of every channel in turn, then row ``y + 1`` (``im2col.sizes``: ``plane`` is a row's
bytes, ``row`` the channels' rows), so a tile that reads the copy in place
(``dense_tile.Taps``) walks 3 runs of adjacent bytes instead of 3 rows in each of ``cg``
planes (ResNet-18's 3x3 64 @56 read in place: 0.94x the packed columns with planes, 1.06x
interleaved; packing from it measured 0.99-1.03x). At stride 2 a row is copied phased: its even
columns, then its odd ones (``column_bytes``), so the taps of adjacent output pixels are
adjacent floats as at stride 1 and the packing copies them a register at a time without
shuffles.

Every byte of ``xp`` is written with its final value, so threads whose parts read the same
rows write the same bytes there. Rows are copied by loads and stores, 16 floats per loop
iteration: a ``memory.copy`` and two ``memory.fill`` per row (calls out of wasm) cost
ResNet-18's 3x3 stride-2 conv as much as its packing. The functions read the conv's
arguments and ``im2col``'s locals by name from the ``Code``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..wasm import Code
from .conv_tiles import EVEN_LANES, ODD_LANES
from .isa import Isa

UNROLL = 16
"""Input floats per iteration of a row's copy (4 registers)."""


def column_bytes(c: Code) -> None:
    """Push the byte offset of column ``col`` in a padded row: ``col * 4``, or in a phased
    row ``odd_bytes`` for an odd column (where the odd columns start) plus ``col / 2 * 4``
    (``im2col.sizes`` sets ``odd_bytes`` and ``pair_bytes`` so one formula serves both)."""
    c.get("col").emit("i32.const", 1).emit("i32.and").get("odd_bytes").emit("i32.mul")
    c.get("col").emit("i32.const", 1).emit("i32.shr_u").get("pair_bytes").emit("i32.mul")
    c.emit("i32.add")


def start(c: Code) -> None:
    """With padding, at a group's start: ``xin`` = its input, ``xg`` = ``xp`` (where the
    packing reads), and ``next_row`` = the first padded row this call's pixels read."""
    c.get("padded")
    with c.if_():
        c.get("xg").set("xin")
        c.get("xp").set("xg")
        c.get("first0", "ow").emit("i32.div_u").get("sh").emit("i32.mul").set("next_row")


def rows(c: Code, isa: Isa) -> None:
    """With padding, copy the padded rows the chunk ``first .. first + count`` reads and no
    earlier chunk did (``next_row`` up to its last output row's window), of every plane,
    just before they are packed: a copy of the whole input first (2 MiB at ddddocr's 3x3/2
    @104) was out of L2 again by the time its last rows were packed."""
    c.get("padded")
    with c.if_():
        # last_row = min(hp, (first + count - 1) / ow * sh + (kh - 1) * dh + 1)
        c.get("first", "count").emit("i32.add").emit("i32.const", 1).emit("i32.sub")
        c.get("ow").emit("i32.div_u").get("sh").emit("i32.mul")
        c.get("kh").emit("i32.const", 1).emit("i32.sub").get("dh").emit("i32.mul")
        c.emit("i32.add").emit("i32.const", 1).emit("i32.add").tee("last_row")
        c.get("hp", "last_row", "hp").emit("i32.lt_u").emit("select").set("last_row")
        c.emit("i32.const", 0).set("ci")
        with c.loop():
            c.get("ci", "cg").emit("i32.ge_u").emit("br_if", 1)
            c.get("next_row").set("prow")
            with c.loop():
                c.get("prow", "last_row").emit("i32.ge_u").emit("br_if", 1)
                # dst = xp + ci * plane + prow * row (the channels' rows interleaved); the input
                # row prow - ph, inside when < h
                c.get("xp", "ci", "plane").emit("i32.mul").emit("i32.add")
                c.get("prow", "row").emit("i32.mul").emit("i32.add").set("dst")
                c.get("prow", "ph").emit("i32.sub").tee("t").get("h").emit("i32.lt_u")
                with c.if_():
                    # src = xin + (ci * h + prow - ph) * w * 4
                    c.get("xin", "ci", "h").emit("i32.mul").get("t").emit("i32.add")
                    c.get("w").emit("i32.mul").emit("i32.const", 2).emit("i32.shl")
                    c.emit("i32.add").set("src")
                    _row(c, isa)
                    c.emit("else")
                    c.get("dst").emit("i32.const", 0).get("row_bytes").emit("memory.fill")
                c.get("prow").emit("i32.const", 1).emit("i32.add").set("prow")
            c.get("ci").emit("i32.const", 1).emit("i32.add").set("ci")
        c.get("last_row", "next_row", "last_row", "next_row").emit("i32.gt_u")
        c.emit("select").set("next_row")


def _row(c: Code, isa: Isa) -> None:
    """Input row ``src`` into the padded row ``dst``: columns 0 .. pw and pw + w .. wp zero,
    the w floats between copied ``UNROLL`` then ``UNROLL / 2`` at a time by a vector ISA
    (split into even and odd columns in a phased row), the rest one by one."""
    _columns(c, lambda: c.emit("i32.const", 0), lambda: c.get("pw"),
             lambda: c.emit("f32.const", 0.0))
    _columns(c, lambda: c.get("pw", "w").emit("i32.add"), lambda: c.get("wp"),
             lambda: c.emit("f32.const", 0.0))
    c.emit("i32.const", 0).set("i")
    c.get("src").set("at")
    if isa.vector:
        # even, odd: where column pw and pw + 1 go (pw + 4 is even + 16 in a plain row)
        for name, column in (("even", 0), ("odd", 1)):
            c.get("pw").emit("i32.const", column).emit("i32.add").set("col")
            c.get("dst")
            column_bytes(c)
            c.emit("i32.add").set(name)
        c.get("phased")
        with c.if_():
            _vector_columns(c, phased=True)
            c.emit("else")
            _vector_columns(c, phased=False)
    _columns(c, lambda: c.get("pw", "i").emit("i32.add"), lambda: c.get("pw", "w").emit("i32.add"),
             lambda: c.get("src", "col", "pw").emit("i32.sub").emit("i32.const", 2)
             .emit("i32.shl").emit("i32.add").emit("f32.load", 2, 0))


def _columns(c: Code, first: Callable[[], object], end: Callable[[], object],
             value: Callable[[], object]) -> None:
    """For ``col`` in ``first() .. end()``: store ``value()`` at column ``col`` of ``dst``."""
    first()
    c.set("col")
    with c.loop():
        c.get("col")
        end()
        c.emit("i32.ge_u").emit("br_if", 1)
        c.get("dst")
        column_bytes(c)
        c.emit("i32.add")
        value()
        c.emit("f32.store", 2, 0)
        c.get("col").emit("i32.const", 1).emit("i32.add").set("col")


def _vector_columns(c: Code, phased: bool) -> None:
    """Input floats ``i`` .. of the row at ``at`` to ``even`` (and ``odd``), ``UNROLL`` a time
    in a loop, then ``UNROLL / 2`` once if they fit, moving the pointers on."""

    def block(floats: int) -> None:
        for r in range(0, floats, 8):
            c.get("at").emit("v128.load", 2, 4 * r).set("va")
            c.get("at").emit("v128.load", 2, 4 * r + 16).set("vb")
            if phased:
                for pointer, lanes in (("even", EVEN_LANES), ("odd", ODD_LANES)):
                    c.get(pointer, "va", "vb").emit("i8x16.shuffle", lanes)
                    c.emit("v128.store", 2, 2 * r)
            else:
                for v, register in enumerate(("va", "vb")):
                    c.get("even", register).emit("v128.store", 2, 4 * r + 16 * v)
        c.get("i").emit("i32.const", floats).emit("i32.add").set("i")
        c.get("at").emit("i32.const", 4 * floats).emit("i32.add").set("at")
        for pointer in ("even", "odd") if phased else ("even",):
            c.get(pointer).emit("i32.const", 2 * floats if phased else 4 * floats)
            c.emit("i32.add").set(pointer)

    def fits(floats: int) -> None:
        c.get("i").emit("i32.const", floats).emit("i32.add").get("w").emit("i32.le_u")

    with c.loop():
        fits(UNROLL)
        c.emit("i32.eqz").emit("br_if", 1)
        block(UNROLL)
    fits(UNROLL // 2)
    with c.if_():
        block(UNROLL // 2)
