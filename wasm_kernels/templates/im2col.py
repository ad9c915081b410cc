"""im2col into the dense tile's panel layout: the columns of a conv's gemm (``pack_im2col``),
``count`` output pixels from pixel ``first`` of one image and group, packed into ``ws`` in
panels of ``PANEL`` pixels: step ``kk = (ci, i, j)`` of panel ``q``'s pixel ``v`` at float
``q * PANEL * K + kk * PANEL + v``, zero where the tap falls in the padding. The last panel's
pixels past ``count`` are left as they were (the tile that reads them stores no column there).

A panel whose 8 pixels lie in one output row with every tap inside the input row (vector ISAs,
stride 1 or 2) is copied a register at a time: per kernel row inside the input, each tap's 8
pixels are 2 loads (4 and 2 shuffles at stride 2) and 2 stores, reading nothing outside the
taps; a kernel row in the padding stores zeros. Other panels (row ends, borders, small planes,
other strides, the scalar ISA) go pixel by pixel with a bounds check per tap.

The functions read the conv's arguments (``cg``, ``h``, ``w``, ``ow``, ``kh`` ... ``dw``) and
the locals ``xg`` (the group's first input plane), ``first``, ``count`` and ``ws`` by name from
the ``Code``; ``declare`` adds the locals they use themselves, ``sizes`` computes what they
derive once per call. Kept apart from the conv so integer convs can pack the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from ..pack import PANEL
from ..wasm import Code
from .conv_tiles import EVEN_LANES
from .isa import Isa

SECOND_HALF = bytes(4 * lane + byte for lane in (0, 2, 5, 7) for byte in range(4))
"""The shuffle taking pixels 8, 10, 12, 14 of a stride-2 row from the registers at pixels
8..11 and 11..14 (the last register starts one float early, so no load passes pixel 14)."""

_LOCALS = ("plane", "row", "steps", "panel_bytes", "ow_lo", "ow_hi", "q", "pixel", "oy", "ox",
           "iy0", "iy", "ci", "ki", "kj", "src", "dst", "v", "ix")


def declare(c: Code, isa: Isa) -> None:
    """Declare the locals the packing uses (all i32, plus two v128 for vector ISAs)."""
    for name in _LOCALS:
        c.local("i32", name)
    if isa.vector:
        c.local("v128", "lo")
        c.local("v128", "hi")


def sizes(c: Code) -> None:
    """``plane``, ``row``: bytes of an input plane and row; ``steps``: K = cg * kh * kw;
    ``panel_bytes``; ``ow_lo``, ``ow_hi``: the output columns whose taps all lie inside the
    input row."""
    c.get("w").emit("i32.const", 2).emit("i32.shl").tee("row")
    c.get("h").emit("i32.mul").set("plane")
    c.get("cg", "kh").emit("i32.mul").get("kw").emit("i32.mul").tee("steps")
    c.emit("i32.const", 4 * PANEL).emit("i32.mul").set("panel_bytes")
    # ow_lo = min(ceil(pw / sw), ow)
    c.get("pw", "sw").emit("i32.add").emit("i32.const", 1).emit("i32.sub").get("sw")
    c.emit("i32.div_u").set("ow_lo")
    _clamp(c, "ow_lo", "ow", "i32.lt_u")
    # ow_hi = max(min(span / sw + 1, ow), ow_lo), span = w - 1 + pw - (kw - 1) * dw (< 0: 0)
    c.get("w", "pw").emit("i32.add").emit("i32.const", 1).emit("i32.sub").get("kw")
    c.emit("i32.const", 1).emit("i32.sub").get("dw").emit("i32.mul").emit("i32.sub").set("ow_hi")
    c.get("ow_hi", "sw").emit("i32.div_s").emit("i32.const", 1).emit("i32.add")
    c.emit("i32.const", 0).get("ow_hi").emit("i32.const", 0).emit("i32.ge_s").emit("select")
    c.set("ow_hi")
    _clamp(c, "ow_hi", "ow", "i32.lt_u")
    _clamp(c, "ow_hi", "ow_lo", "i32.gt_u")


def _clamp(c: Code, name: str, other: str, keep_if: str) -> None:
    """``name = name if name <keep_if> other else other``."""
    c.get(name, other, name, other).emit(keep_if).emit("select").set(name)


def pack(c: Code, isa: Isa) -> None:
    """Pack pixels ``first .. first + count`` into ``ws``, panel by panel."""
    c.emit("i32.const", 0).set("q")
    with c.loop():
        c.get("q").emit("i32.const", PANEL).emit("i32.mul").get("count").emit("i32.ge_u")
        c.emit("br_if", 1)
        # dst = ws + q * panel_bytes; pixel = first + q * PANEL; oy, ox = divmod(pixel, ow)
        c.get("ws", "q", "panel_bytes").emit("i32.mul").emit("i32.add").set("dst")
        c.get("first", "q").emit("i32.const", PANEL).emit("i32.mul").emit("i32.add")
        c.tee("pixel").get("ow").emit("i32.div_u").set("oy")
        c.get("pixel", "ow").emit("i32.rem_u").set("ox")
        if isa.vector:
            # whole = ox >= ow_lo && ox + PANEL <= ow_hi && sw in (1, 2)
            c.get("ox", "ow_lo").emit("i32.ge_u")
            c.get("ox").emit("i32.const", PANEL).emit("i32.add").get("ow_hi").emit("i32.le_u")
            c.emit("i32.and").get("sw").emit("i32.const", 1).emit("i32.sub")
            c.emit("i32.const", 2).emit("i32.lt_u").emit("i32.and")
            with c.if_():
                c.get("sw").emit("i32.const", 1).emit("i32.eq")
                c.emit("if")
                _whole_panel(c, isa, 1)
                c.emit("else")
                _whole_panel(c, isa, 2)
                c.emit("end")
                c.emit("else")
                _pixels(c)
        else:
            _pixels(c)
        c.get("q").emit("i32.const", 1).emit("i32.add").set("q")


def _kernel_rows(c: Code, inside: Callable[[], None], outside: Callable[[], None]) -> None:
    """For each input channel and kernel row: ``inside()`` with ``iy`` the input row and
    ``src`` the address of channel ``ci``'s row ``iy`` when that row exists, else
    ``outside()``."""
    c.emit("i32.const", 0).set("ci")
    with c.loop():
        c.get("ci", "cg").emit("i32.ge_u").emit("br_if", 1)
        c.emit("i32.const", 0).set("ki")
        with c.loop():
            c.get("ki", "kh").emit("i32.ge_u").emit("br_if", 1)
            # iy = iy0 + ki * dh
            c.get("iy0", "ki", "dh").emit("i32.mul").emit("i32.add").tee("iy")
            c.get("h").emit("i32.lt_u")
            with c.if_():
                c.get("xg", "ci", "plane").emit("i32.mul").emit("i32.add")
                c.get("iy", "row").emit("i32.mul").emit("i32.add").set("src")
                inside()
                c.emit("else")
                outside()
            c.get("ki").emit("i32.const", 1).emit("i32.add").set("ki")
        c.get("ci").emit("i32.const", 1).emit("i32.add").set("ci")


def _whole_panel(c: Code, isa: Isa, stride: int) -> None:
    """The panel's 8 pixels in one output row, every tap inside the row: copy a tap's 8
    pixels as 2 registers per step."""
    c.get("oy", "sh").emit("i32.mul").get("ph").emit("i32.sub").set("iy0")

    def inside() -> None:
        # src += (ox * sw - pw) * 4: the row's first pixel under tap 0
        c.get("src", "ox", "sw").emit("i32.mul").get("pw").emit("i32.sub")
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").set("src")
        _taps(c, lambda: _copy_step(c, isa, stride))

    def outside() -> None:
        _taps(c, lambda: _zero_step(c, isa))

    _kernel_rows(c, inside, outside)


def _taps(c: Code, step: Callable[[], None]) -> None:
    """``step()`` for each of the kw taps of a kernel row, then ``src += dw * 4`` and ``dst``
    one step on."""
    c.emit("i32.const", 0).set("kj")
    with c.loop():
        c.get("kj", "kw").emit("i32.ge_u").emit("br_if", 1)
        step()
        c.get("src", "dw").emit("i32.const", 2).emit("i32.shl").emit("i32.add").set("src")
        c.get("dst").emit("i32.const", 4 * PANEL).emit("i32.add").set("dst")
        c.get("kj").emit("i32.const", 1).emit("i32.add").set("kj")


def _copy_step(c: Code, isa: Isa, stride: int) -> None:
    """Copy the 8 pixels from ``src`` (every ``stride``-th float) to ``dst``."""
    if stride == 1:
        for v in range(2):
            c.get("dst", "src")
            isa.load(c, 16 * v)
            isa.store(c, 16 * v)
        return
    c.get("dst", "src").emit("v128.load", 2, 0).get("src").emit("v128.load", 2, 16)
    c.emit("i8x16.shuffle", EVEN_LANES).emit("v128.store", 2, 0)
    c.get("dst", "src").emit("v128.load", 2, 32).get("src").emit("v128.load", 2, 44)
    c.emit("i8x16.shuffle", SECOND_HALF).emit("v128.store", 2, 16)


def _zero_step(c: Code, isa: Isa) -> None:
    """Store 8 zeros at ``dst``."""
    for v in range(2):
        c.get("dst")
        isa.const(c, 0.0)
        isa.store(c, 16 * v)


def _pixels(c: Code) -> None:
    """The panel pixel by pixel (those before ``count``), a bounds check per tap."""
    c.emit("i32.const", 0).set("v")
    with c.loop():
        c.get("v").emit("i32.const", PANEL).emit("i32.ge_u").emit("br_if", 1)
        c.get("q").emit("i32.const", PANEL).emit("i32.mul").get("v").emit("i32.add")
        c.get("count").emit("i32.ge_u").emit("br_if", 1)
        # oy, ox of pixel + v; iy0 = oy * sh - ph; dst of this pixel's step 0
        c.get("pixel", "v").emit("i32.add").tee("iy").get("ow").emit("i32.div_u").set("oy")
        c.get("iy", "ow").emit("i32.rem_u").set("ox")
        c.get("oy", "sh").emit("i32.mul").get("ph").emit("i32.sub").set("iy0")
        c.get("ws", "q", "panel_bytes").emit("i32.mul").emit("i32.add")
        c.get("v").emit("i32.const", 2).emit("i32.shl").emit("i32.add").set("dst")

        def inside() -> None:
            c.emit("i32.const", 0).set("kj")
            with c.loop():
                c.get("kj", "kw").emit("i32.ge_u").emit("br_if", 1)
                # ix = ox * sw - pw + kj * dw; dst <- ix in [0, w) ? src[ix] : 0
                c.get("ox", "sw").emit("i32.mul").get("pw").emit("i32.sub")
                c.get("kj", "dw").emit("i32.mul").emit("i32.add").tee("ix")
                c.get("dst", "ix", "w").emit("i32.lt_u")
                with c.if_("f32"):
                    c.get("src", "ix").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
                    c.emit("f32.load", 2, 0).emit("else").emit("f32.const", 0.0)
                c.emit("f32.store", 2, 0)
                _next_step(c)
                c.get("kj").emit("i32.const", 1).emit("i32.add").set("kj")

        def outside() -> None:
            c.emit("i32.const", 0).set("kj")
            with c.loop():
                c.get("kj", "kw").emit("i32.ge_u").emit("br_if", 1)
                c.get("dst").emit("f32.const", 0.0).emit("f32.store", 2, 0)
                _next_step(c)
                c.get("kj").emit("i32.const", 1).emit("i32.add").set("kj")

        _kernel_rows(c, inside, outside)
        c.get("v").emit("i32.const", 1).emit("i32.add").set("v")


def _next_step(c: Code) -> None:
    c.get("dst").emit("i32.const", 4 * PANEL).emit("i32.add").set("dst")
