"""The padded copy of a conv's input (``im2col``): the group's ``cg`` input planes from ``xg``
into the scratch ``xp`` inside their zero borders, so that every tap of every output pixel
is a plain load. At stride 2 a row is copied phased: its even columns, then its odd ones
(``column_bytes``), so the taps of adjacent output pixels are adjacent floats as at stride 1
and the packing copies them a register at a time without shuffles.

Every byte of ``xp`` is written once with its final value, so threads that each pad the rows
their pixels read write the same bytes where those overlap. Rows are copied by loads and
stores, 16 floats per loop iteration: a ``memory.copy`` and two ``memory.fill`` per row
(calls out of wasm) cost
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


def pad(c: Code, isa: Isa, first: str, end: str) -> None:
    """With padding, copy the group's input planes into ``xp`` and point ``xg`` there;
    without, nothing. Only the padded rows that output pixels ``first .. end`` (locals;
    ``end > first``) read are written, so threads that split the pixels each write their
    own rows (and the same bytes where their rows overlap): per plane, a row above or below
    the input is zeroed (one ``memory.fill``), an input row copied."""
    c.get("padded")
    with c.if_():
        # row_lo = first // ow * sh; row_hi = min((end - 1) // ow * sh + (kh - 1) * dh, hp - 1)
        c.get(first, "ow").emit("i32.div_u").get("sh").emit("i32.mul").set("row_lo")
        c.get(end).emit("i32.const", 1).emit("i32.sub").get("ow").emit("i32.div_u")
        c.get("sh").emit("i32.mul").get("kh").emit("i32.const", 1).emit("i32.sub")
        c.get("dh").emit("i32.mul").emit("i32.add").tee("row_hi")
        c.get("hp").emit("i32.const", 1).emit("i32.sub").tee("t")
        c.get("row_hi", "t").emit("i32.lt_u").emit("select").set("row_hi")
        c.emit("i32.const", 0).set("ci")
        with c.loop():
            c.get("ci", "cg").emit("i32.ge_u").emit("br_if", 1)
            c.get("row_lo").set("oy")
            with c.loop():
                c.get("oy", "row_hi").emit("i32.gt_u").emit("br_if", 1)
                # dst = xp + (ci * hp + oy) * row; src = xg + (ci * h + oy - ph) * w * 4
                c.get("xp", "ci", "hp").emit("i32.mul").get("oy").emit("i32.add")
                c.get("row").emit("i32.mul").emit("i32.add").set("dst")
                c.get("oy", "ph").emit("i32.sub").get("h").emit("i32.lt_u")
                with c.if_():  # an input row (unsigned: rows above it wrap past h)
                    c.get("xg", "ci", "h").emit("i32.mul").get("oy").emit("i32.add")
                    c.get("ph").emit("i32.sub").get("w").emit("i32.mul")
                    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").set("src")
                    _row(c, isa)
                    c.emit("else")
                    c.get("dst").emit("i32.const", 0).get("row").emit("memory.fill")
                c.get("oy").emit("i32.const", 1).emit("i32.add").set("oy")
            c.get("ci").emit("i32.const", 1).emit("i32.add").set("ci")
        c.get("xp").set("xg")


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
