"""im2col into the dense tile's panel layout: the columns of a conv's gemm (``pack_im2col``),
``count`` output pixels from pixel ``first`` of one image and group, packed at ``cols`` in
panels of ``PANEL`` pixels: step ``kk = (ci, i, j)`` of panel ``q``'s pixel ``v`` at float
``q * PANEL * K + kk * PANEL + v``. The last panel's pixels past ``count`` hold copies of
real pixels (the tile that reads them stores no column there).

A padded conv first copies the group's input planes into the scratch ``xp`` with their zero
borders (``pad``: one ``memory.fill`` and a ``memory.copy`` per row), so that every tap of
every pixel is a plain load: no bounds checks, no masks, no border cases. Then per panel:

- its 8 pixels in one output row at stride 1 or 2 (vector ISAs): each step's 8 pixels are 2
  loads (4 and 2 shuffles at stride 2) and 2 stores;
- otherwise (a panel across output rows, as most are on 7x7 and 14x14 planes; other strides;
  the scalar ISA): the 8 pixels' addresses are computed once per panel and each step adds
  the same tap offset to all of them: 8 loads and stores.

The functions read the conv's arguments (``cg``, ``h``, ``w``, ``oh``, ``ow``, ``kh`` ...
``dw``) and the locals ``xg`` (the group's first input plane), ``first``, ``count``,
``cols`` (where the panels go) and ``xp`` by name from the ``Code``; ``declare`` adds the
locals they use, ``sizes`` computes what they derive once per call. Kept apart from the
conv so that integer convs can pack the same way.
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

_LOCALS = ("hp", "wp", "plane", "row", "steps", "panel_bytes", "padded", "q", "pixel", "oy",
           "ox", "ci", "ki", "kj", "src", "dst", "tap", "t", "tap_ci", "tap_ki", "tap_dh",
           "tap_dw", "row_lo", "row_hi")


def declare(c: Code, isa: Isa) -> None:
    """Declare the locals the packing uses (all i32)."""
    for name in _LOCALS:
        c.local("i32", name)
    for v in range(PANEL):
        c.local("i32", f"base{v}")


def sizes(c: Code) -> None:
    """``hp``, ``wp``: the padded plane (``pack_im2col.padded_size``; the input itself when
    ``padded`` is 0); ``plane``, ``row``: its bytes per plane and row; ``steps``: K = cg * kh * kw;
    ``panel_bytes``."""
    c.get("ph", "pw").emit("i32.or").set("padded")
    for padded, size, out, kernel, stride, pad, dilation in (
            ("hp", "h", "oh", "kh", "sh", "ph", "dh"), ("wp", "w", "ow", "kw", "sw", "pw", "dw")):
        # padded = max(size + pad, (out - 1) * stride + (kernel - 1) * dilation + 1)
        c.get(out).emit("i32.const", 1).emit("i32.sub").get(stride).emit("i32.mul")
        c.get(kernel).emit("i32.const", 1).emit("i32.sub").get(dilation).emit("i32.mul")
        c.emit("i32.add").emit("i32.const", 1).emit("i32.add").set(padded)
        c.get(size, pad).emit("i32.add").set("t")
        c.get("t", padded, "t", padded).emit("i32.gt_s").emit("select").set(padded)
        c.get(padded, size, "padded").emit("select").set(padded)
    c.get("wp").emit("i32.const", 2).emit("i32.shl").tee("row")
    c.get("hp").emit("i32.mul").set("plane")
    c.get("dh", "row").emit("i32.mul").set("tap_dh")
    c.get("dw").emit("i32.const", 2).emit("i32.shl").set("tap_dw")
    c.get("cg", "kh").emit("i32.mul").get("kw").emit("i32.mul").tee("steps")
    c.emit("i32.const", 4 * PANEL).emit("i32.mul").set("panel_bytes")


def pad(c: Code, first: str, end: str) -> None:
    """With padding, copy the group's ``cg`` input planes from ``xg`` into ``xp`` inside their
    zero borders and point ``xg`` there; without, nothing. Only the padded rows that output
    pixels ``first .. end`` (locals; ``end > first``) read are written, each byte once with
    its final value: threads that split the pixels write their own rows, and the same bytes
    where their rows overlap."""
    c.get("padded")
    with c.if_():
        # row_lo = first // ow * sh; row_hi = (end - 1) // ow * sh + (kh - 1) * dh
        c.get(first, "ow").emit("i32.div_u").get("sh").emit("i32.mul").set("row_lo")
        c.get(end).emit("i32.const", 1).emit("i32.sub").get("ow").emit("i32.div_u")
        c.get("sh").emit("i32.mul").get("kh").emit("i32.const", 1).emit("i32.sub")
        c.get("dh").emit("i32.mul").emit("i32.add").set("row_hi")
        c.emit("i32.const", 0).set("t")
        with c.loop():
            # padded rows of all planes in turn: t = ci * hp + y; dst = xp + t * row
            c.get("t", "cg", "hp").emit("i32.mul").emit("i32.ge_u").emit("br_if", 1)
            c.get("t", "hp").emit("i32.rem_u").get("row_lo").emit("i32.sub")
            c.get("row_hi", "row_lo").emit("i32.sub").emit("i32.gt_u")
            with c.if_():  # a row no pixel here reads
                c.get("t").emit("i32.const", 1).emit("i32.add").set("t").emit("br", 1)
            c.get("xp", "t", "row").emit("i32.mul").emit("i32.add").set("dst")
            # oy = y - ph: the input row, inside when oy < h (unsigned)
            c.get("t", "hp").emit("i32.rem_u").get("ph").emit("i32.sub").tee("oy")
            c.get("h").emit("i32.lt_u")
            with c.if_():
                _fill(c, lambda: c.get("dst"), lambda: c.get("pw").emit("i32.const", 2)
                      .emit("i32.shl"))
                c.get("dst", "pw").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
                c.get("xg", "t", "hp").emit("i32.div_u").get("h").emit("i32.mul").get("oy")
                c.emit("i32.add").get("w").emit("i32.mul").emit("i32.const", 2)
                c.emit("i32.shl").emit("i32.add")
                c.get("w").emit("i32.const", 2).emit("i32.shl").emit("memory.copy")
                # the right border: wp - pw - w floats after the row
                _fill(c, lambda: c.get("dst", "pw", "w").emit("i32.add").emit("i32.const", 2)
                      .emit("i32.shl").emit("i32.add"),
                      lambda: c.get("wp", "pw").emit("i32.sub").get("w").emit("i32.sub")
                      .emit("i32.const", 2).emit("i32.shl"))
                c.emit("else")
                _fill(c, lambda: c.get("dst"), lambda: c.get("row"))
            c.get("t").emit("i32.const", 1).emit("i32.add").set("t")
        c.get("xp").set("xg")


def _fill(c: Code, at: Callable[[], object], size: Callable[[], object]) -> None:
    """Zero ``size()`` bytes at ``at()``."""
    at()
    c.emit("i32.const", 0)
    size()
    c.emit("memory.fill")


def pack(c: Code, isa: Isa) -> None:
    """Pack pixels ``first .. first + count`` of the (padded) input at ``xg`` into ``ws``,
    panel by panel."""
    c.emit("i32.const", 0).set("q")
    with c.loop():
        c.get("q").emit("i32.const", PANEL).emit("i32.mul").get("count").emit("i32.ge_u")
        c.emit("br_if", 1)
        # dst = ws + q * panel_bytes; pixel = first + q * PANEL; oy, ox = divmod(pixel, ow)
        c.get("cols", "q", "panel_bytes").emit("i32.mul").emit("i32.add").set("dst")
        c.get("first", "q").emit("i32.const", PANEL).emit("i32.mul").emit("i32.add")
        c.tee("pixel").get("ow").emit("i32.div_u").set("oy")
        c.get("pixel", "ow").emit("i32.rem_u").set("ox")
        if isa.vector:
            # one row: ox + PANEL <= ow and sw in (1, 2)
            c.get("ox").emit("i32.const", PANEL).emit("i32.add").get("ow").emit("i32.le_u")
            c.get("sw").emit("i32.const", 1).emit("i32.sub").emit("i32.const", 2)
            c.emit("i32.lt_u").emit("i32.and")
            with c.if_():
                _pixel_address(c, "oy", "ox", "src")
                c.get("sw").emit("i32.const", 1).emit("i32.eq")
                with c.if_():
                    _steps(c, lambda: _copy_step(c, isa, 1))
                    c.emit("else")
                    _steps(c, lambda: _copy_step(c, isa, 2))
                c.emit("else")
                _gather_panel(c)
        else:
            _gather_panel(c)
        c.get("q").emit("i32.const", 1).emit("i32.add").set("q")


def _pixel_address(c: Code, oy: str, ox: str, into: str) -> None:
    """``into = xg + oy * sh * row + ox * sw * 4``: the pixel's tap (0, 0) in the padded
    input."""
    c.get("xg", oy, "sh").emit("i32.mul").get("row").emit("i32.mul").emit("i32.add")
    c.get(ox, "sw").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    c.set(into)


def _steps(c: Code, step: Callable[[], None]) -> None:
    """``step()`` with ``tap`` the byte offset of step ``(ci, ki, kj)`` from a pixel's tap
    (0, 0) (``ci * plane + ki * dh * row + kj * dw * 4``, kept by adds), for every step in
    order, ``dst`` one step on after each. A 3x3 kernel's 9 taps (and any kernel row of 3)
    are straight-line code: fewer loop back-edges, each an interruption check under a
    timeout (ResNet-18 under a timeout: 1.14x -> 1.10x the run without)."""

    def tap_step() -> None:
        step()
        c.get("dst").emit("i32.const", 4 * PANEL).emit("i32.add").set("dst")
        c.get("tap", "tap_dw").emit("i32.add").set("tap")

    def kernel_row(unrolled: bool) -> None:
        c.get("tap_ki").set("tap")
        if unrolled:
            for _ in range(3):
                tap_step()
        else:
            c.emit("i32.const", 0).set("kj")
            with c.loop():
                c.get("kj", "kw").emit("i32.ge_u").emit("br_if", 1)
                tap_step()
                c.get("kj").emit("i32.const", 1).emit("i32.add").set("kj")
        c.get("tap_ki", "tap_dh").emit("i32.add").set("tap_ki")

    def kernel_rows(unrolled: bool) -> None:
        c.emit("i32.const", 0).set("ki")
        with c.loop():
            c.get("ki", "kh").emit("i32.ge_u").emit("br_if", 1)
            kernel_row(unrolled)
            c.get("ki").emit("i32.const", 1).emit("i32.add").set("ki")

    def channels(body: Callable[[], None]) -> None:
        c.emit("i32.const", 0).set("tap_ci")
        c.emit("i32.const", 0).set("ci")
        with c.loop():
            c.get("ci", "cg").emit("i32.ge_u").emit("br_if", 1)
            body()
            c.get("tap_ci", "plane").emit("i32.add").set("tap_ci")
            c.get("ci").emit("i32.const", 1).emit("i32.add").set("ci")

    def pointwise() -> None:
        c.get("tap_ci").set("tap")
        step()
        c.get("dst").emit("i32.const", 4 * PANEL).emit("i32.add").set("dst")

    def taps() -> None:
        c.get("tap_ci").set("tap_ki")
        c.get("kw").emit("i32.const", 3).emit("i32.eq")
        with c.if_():
            c.get("kh").emit("i32.const", 3).emit("i32.eq")
            with c.if_():
                for _ in range(3):
                    kernel_row(True)
                c.emit("else")
                kernel_rows(True)
            c.emit("else")
            kernel_rows(False)

    # a 1x1 kernel: one step per channel, nothing else to loop over
    c.get("kh", "kw").emit("i32.mul").emit("i32.const", 1).emit("i32.eq")
    with c.if_():
        channels(pointwise)
        c.emit("else")
        channels(taps)


def _copy_step(c: Code, isa: Isa, stride: int) -> None:
    """Copy the 8 pixels of one output row from ``src + tap`` (every ``stride``-th float) to
    ``dst``."""
    c.get("src", "tap").emit("i32.add").set("t")
    if stride == 1:
        for v in range(2):
            c.get("dst", "t")
            isa.load(c, 16 * v)
            isa.store(c, 16 * v)
        return
    c.get("dst", "t").emit("v128.load", 2, 0).get("t").emit("v128.load", 2, 16)
    c.emit("i8x16.shuffle", EVEN_LANES).emit("v128.store", 2, 0)
    c.get("dst", "t").emit("v128.load", 2, 32).get("t").emit("v128.load", 2, 44)
    c.emit("i8x16.shuffle", SECOND_HALF).emit("v128.store", 2, 16)


def _gather_panel(c: Code) -> None:
    """The panel's pixels anywhere: their tap (0, 0) addresses once (a pixel past ``count``
    takes the panel's first), then per step 8 loads at the same offset from them."""
    for v in range(PANEL):
        base = f"base{v}"
        if v:
            c.get("q").emit("i32.const", PANEL).emit("i32.mul").emit("i32.const", v)
            c.emit("i32.add").get("count").emit("i32.lt_u")
            c.emit("if")
            c.get("pixel").emit("i32.const", v).emit("i32.add").tee("t").get("ow")
            c.emit("i32.div_u").set("oy")
            c.get("t", "ow").emit("i32.rem_u").set("ox")
        _pixel_address(c, "oy", "ox", base)
        if v:
            c.emit("else").get("base0").set(base).emit("end")

    def step() -> None:
        for v in range(PANEL):
            c.get("dst", f"base{v}", "tap").emit("i32.add").emit("f32.load", 2, 0)
            c.emit("f32.store", 2, 4 * v)

    _steps(c, step)
