"""im2col into the dense tile's panel layout: the columns of a conv's gemm (``pack_im2col``),
``count`` output pixels from pixel ``first`` of one image and group, packed at ``cols`` in
panels of ``PANEL`` pixels: step ``kk = (ci, i, j)`` of panel ``q``'s pixel ``v`` at float
``q * PANEL * K + kk * PANEL + v``. The last panel's pixels past ``count`` hold copies of
real pixels (the tile that reads them stores no column there).

A padded conv copies the group's input planes into the scratch ``xp`` with their zero borders
(``padded_copy``, the rows a chunk reads before packing it), so that every tap of every pixel
is a plain load: no bounds checks, no masks, no border cases; at stride 2 phased, so a tap's
adjacent output pixels are adjacent floats as at stride 1. Then per panel:

- each half of it (pixels 0..3 and 4..7) in one output row, at stride 1, phased, or 2
  unpadded (vector ISAs): each step is a load and a store per half (2 loads and a shuffle
  unpadded at stride 2); with kernel rows of 3 or ``STEM`` adjacent taps, at constant
  offsets from a pointer per kernel row and half (``_row_steps``: 1.00-1.06x the packing
  that added each tap's offset at run time). Every panel of a plane whose width is a
  multiple of 4 goes so;
- otherwise (halves across output rows, as many are on 7x7 and 14x14 planes; other strides;
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
from .isa import Isa
from .padded_copy import column_bytes

STRIDE2_HALF = bytes(4 * lane + byte for lane in (0, 2, 5, 7) for byte in range(4))
"""The shuffle taking floats 0, 2, 4, 6 of a stride-2 row from the registers at floats 0..3
and 3..6 (the second starts one float early, so no load passes float 6)."""

STEM = 7
"""A kernel width whose rows are straight-line too besides 3 (ResNet's 7x7 stride-2 stem)."""

_LOCALS = ("hp", "wp", "plane", "row", "row_bytes", "steps", "panel_bytes", "padded", "phased",
           "odd_bytes", "pair_bytes", "ox_bytes", "q", "pixel", "oy", "ox", "oy2", "ox2", "halves",
           "ci", "ki", "kj", "col", "i", "src", "src2", "dst", "at", "even", "odd", "tap", "t",
           "tap_ci", "tap_ki", "tap_dh", "tap_j1", "tap_j2", "xin", "prow", "next_row", "last_row",
           "by_rows", "row1", "row2", "odd1", "odd2")


def declare(c: Code, isa: Isa) -> None:
    """Declare the locals the packing and ``padded_copy`` use (i32, and two v128 for a vector
    ISA)."""
    for name in _LOCALS:
        c.local("i32", name)
    for v in range(PANEL):
        c.local("i32", f"base{v}")
    if isa.vector:
        c.local("v128", "va")
        c.local("v128", "vb")


def sizes(c: Code) -> None:
    """``hp``, ``wp``: the padded plane (``pack_im2col.padded_size``; the input itself when
    ``padded`` is 0); ``row_bytes``: a row's bytes; ``plane``, ``row``: the bytes from one
    channel's rows to the next's and from one row to the next (in a padded copy the channels'
    rows interleave: ``row_bytes`` and ``cg * row_bytes``); ``steps``: K = cg * kh * kw;
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
    # rows of row_bytes; a padded copy interleaves the channels' rows (row y of every
    # channel, then row y + 1), so a tile reading it in place walks 3 runs of adjacent bytes
    c.get("wp").emit("i32.const", 2).emit("i32.shl").set("row_bytes")
    c.get("row_bytes", "cg").emit("i32.mul").get("row_bytes", "padded").emit("select").set("row")
    c.get("row_bytes", "row_bytes", "hp").emit("i32.mul").get("padded").emit("select")
    c.set("plane")
    c.get("dh", "row").emit("i32.mul").set("tap_dh")
    # phased = padded and sw == 2; where column X of a padded row lies (_column_bytes)
    c.get("padded").emit("i32.const", 0).emit("i32.ne").get("sw").emit("i32.const", 2)
    c.emit("i32.eq").emit("i32.and").set("phased")
    c.get("wp").emit("i32.const", 1).emit("i32.add").emit("i32.const", 1).emit("i32.shr_u")
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.const", 4).get("phased").emit("select")
    c.set("odd_bytes")
    c.emit("i32.const", 4).emit("i32.const", 8).get("phased").emit("select").set("pair_bytes")
    c.emit("i32.const", 4).get("sw").emit("i32.const", 2).emit("i32.shl").get("phased")
    c.emit("select").set("ox_bytes")
    for kj, tap in ((1, "tap_j1"), (2, "tap_j2")):
        c.get("dw").emit("i32.const", kj).emit("i32.mul").set("col")
        column_bytes(c)
        c.set(tap)
    c.get("cg", "kh").emit("i32.mul").get("kw").emit("i32.mul").tee("steps")
    c.emit("i32.const", 4 * PANEL).emit("i32.mul").set("panel_bytes")
    # by_rows = ox_bytes == 4 and dw == 1 and kw in (3, STEM): _row_steps packs the halves
    c.get("ox_bytes").emit("i32.const", 4).emit("i32.eq")
    c.get("dw").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    c.get("kw").emit("i32.const", 3).emit("i32.eq")
    c.get("kw").emit("i32.const", STEM).emit("i32.eq").emit("i32.or").emit("i32.and")
    c.set("by_rows")


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
            _halves(c)
            c.get("halves")
            with c.if_():
                c.get("by_rows")
                with c.if_():
                    _row_steps(c, isa)
                    c.emit("else")
                    c.get("ox_bytes").emit("i32.const", 4).emit("i32.eq")
                    with c.if_():
                        _steps(c, lambda: _copy_step(c, isa, 1))
                        c.emit("else")
                        _steps(c, lambda: _copy_step(c, isa, 2))
                c.emit("else")
                _gather_panel(c)
        else:
            _gather_panel(c)
        c.get("q").emit("i32.const", 1).emit("i32.add").set("q")


def _halves(c: Code) -> None:
    """``halves``: whether each half of the panel (pixels 0..3 and 4..7) lies in one output row
    with adjacent pixels 4 or 8 bytes apart, then ``src`` and ``src2`` are their first
    pixels' tap (0, 0). A second half wholly past ``count`` copies the first. Every panel of
    a plane whose width is a multiple of 4 (28, 52, 56 ...) goes by halves."""
    c.emit("i32.const", 0).set("halves")
    c.get("ox").emit("i32.const", PANEL // 2).emit("i32.add").get("ow").emit("i32.le_u")
    c.get("ox_bytes").emit("i32.const", 4).emit("i32.eq")
    c.get("ox_bytes").emit("i32.const", 8).emit("i32.eq").emit("i32.or")
    c.emit("i32.and")
    with c.if_():
        _pixel_address(c, "oy", "ox", "src")
        c.get("src").set("src2")
        c.emit("i32.const", 1).set("halves")
        c.get("q").emit("i32.const", PANEL).emit("i32.mul").emit("i32.const", PANEL // 2)
        c.emit("i32.add").get("count").emit("i32.lt_u")
        with c.if_():
            c.get("pixel").emit("i32.const", PANEL // 2).emit("i32.add").tee("t")
            c.get("ow").emit("i32.div_u").set("oy2")
            c.get("t", "ow").emit("i32.rem_u").tee("ox2")
            c.emit("i32.const", PANEL // 2).emit("i32.add").get("ow").emit("i32.le_u")
            c.set("halves")
            _pixel_address(c, "oy2", "ox2", "src2")


def _pixel_address(c: Code, oy: str, ox: str, into: str) -> None:
    """``into = xg + oy * sh * row + ox * ox_bytes``: the pixel's tap (0, 0) in the (padded)
    input, ``ox_bytes`` being ``sw * 4``, or 4 in a phased row."""
    c.get("xg", oy, "sh").emit("i32.mul").get("row").emit("i32.mul").emit("i32.add")
    c.get(ox, "ox_bytes").emit("i32.mul").emit("i32.add")
    c.set(into)


def _steps(c: Code, step: Callable[[], None]) -> None:
    """``step()`` with ``tap`` the byte offset of step ``(ci, ki, kj)`` from a pixel's tap
    (0, 0) (``ci * plane + ki * dh * row`` kept by adds, plus column ``kj * dw``'s bytes:
    ``column_bytes``, ``tap_j1`` and ``tap_j2``), for every step in order, ``dst`` one step
    on after each. A 3x3 kernel's 9 taps (and any kernel row of 3 or ``STEM``) are
    straight-line code: fewer loop back-edges, each an interruption check under a timeout
    (ResNet-18 under a timeout: 1.14x -> 1.10x the run without)."""

    def tap_step() -> None:
        c.set("tap")
        step()
        c.get("dst").emit("i32.const", 4 * PANEL).emit("i32.add").set("dst")

    def kernel_row(unrolled: int) -> None:
        # kw = unrolled taps straight-line (3: their offsets precomputed), or a loop (0)
        if unrolled == 3:
            for column in (None, "tap_j1", "tap_j2"):
                c.get("tap_ki")
                if column:
                    c.get(column).emit("i32.add")
                tap_step()
        elif unrolled:
            for kj in range(unrolled):
                c.get("dw").emit("i32.const", kj).emit("i32.mul").set("col")
                c.get("tap_ki")
                column_bytes(c)
                c.emit("i32.add")
                tap_step()
        else:
            c.emit("i32.const", 0).set("kj")
            with c.loop():
                c.get("kj", "kw").emit("i32.ge_u").emit("br_if", 1)
                c.get("kj", "dw").emit("i32.mul").set("col")
                c.get("tap_ki")
                column_bytes(c)
                c.emit("i32.add")
                tap_step()
                c.get("kj").emit("i32.const", 1).emit("i32.add").set("kj")
        c.get("tap_ki", "tap_dh").emit("i32.add").set("tap_ki")

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
        _kernel_rows(c, kernel_row, any_width=True)

    # a 1x1 kernel: one step per channel, nothing else to loop over
    c.get("kh", "kw").emit("i32.mul").emit("i32.const", 1).emit("i32.eq")
    with c.if_():
        channels(pointwise)
        c.emit("else")
        channels(taps)


def _row_steps(c: Code, isa: Isa) -> None:
    """Every step of a panel by halves whose kernel rows are 3 or ``STEM`` adjacent taps
    (``by_rows``: dilation 1, a stride-1 or phased row): per kernel row a pointer to each
    half's first tap, and in a phased row one to its odd columns, so each tap is a load and a
    store at constant offsets from them (a phased row's even tap ``2 j`` at ``4 j`` bytes, its
    odd tap ``2 j + 1`` at ``4 j`` bytes past the odd pointer). ``_steps`` computes every
    tap's offset at run time and adds it to both halves' pointers: about twice the
    instructions per step."""

    def kernel_row(width: int, phased: bool) -> None:
        c.get("src", "tap_ki").emit("i32.add").set("row1")
        c.get("src2", "tap_ki").emit("i32.add").set("row2")
        if phased:
            c.get("row1", "odd_bytes").emit("i32.add").set("odd1")
            c.get("row2", "odd_bytes").emit("i32.add").set("odd2")
        _row_copies(c, isa, width, phased)
        c.get("dst").emit("i32.const", 4 * PANEL * width).emit("i32.add").set("dst")
        c.get("tap_ki", "tap_dh").emit("i32.add").set("tap_ki")

    def channels(phased: bool) -> None:
        c.emit("i32.const", 0).set("tap_ci")
        c.emit("i32.const", 0).set("ci")
        with c.loop():
            c.get("ci", "cg").emit("i32.ge_u").emit("br_if", 1)
            c.get("tap_ci").set("tap_ki")
            _kernel_rows(c, lambda width: kernel_row(width, phased), any_width=False)
            c.get("tap_ci", "plane").emit("i32.add").set("tap_ci")
            c.get("ci").emit("i32.const", 1).emit("i32.add").set("ci")

    c.get("phased")
    with c.if_():
        channels(phased=True)
        c.emit("else")
        channels(phased=False)


def _kernel_rows(c: Code, kernel_row: Callable[[int], None], any_width: bool) -> None:
    """``kernel_row(width)`` for each of the ``kh`` kernel rows: a 3x3 kernel's 3 rows
    straight-line, others a loop over rows of 3 or ``STEM`` taps, or, when ``any_width``,
    of ``kw`` taps looped over (width 0) for any other ``kw``."""

    def rows(width: int) -> None:
        c.emit("i32.const", 0).set("ki")
        with c.loop():
            c.get("ki", "kh").emit("i32.ge_u").emit("br_if", 1)
            kernel_row(width)
            c.get("ki").emit("i32.const", 1).emit("i32.add").set("ki")

    c.get("kw").emit("i32.const", 3).emit("i32.eq")
    with c.if_():
        c.get("kh").emit("i32.const", 3).emit("i32.eq")
        with c.if_():
            for _ in range(3):
                kernel_row(3)
            c.emit("else")
            rows(3)
        c.emit("else")
        if any_width:
            c.get("kw").emit("i32.const", STEM).emit("i32.eq")
            with c.if_():
                rows(STEM)
                c.emit("else")
                rows(0)
        else:
            rows(STEM)


def _row_copies(c: Code, isa: Isa, width: int, phased: bool) -> None:
    """Copy a kernel row's ``width`` taps of both halves (``_row_steps``) to ``dst``."""
    for kj in range(width):
        for half, (even, odd) in enumerate((("row1", "odd1"), ("row2", "odd2"))):
            c.get("dst", odd if phased and kj % 2 else even)
            isa.load(c, 4 * (kj // 2) if phased else 4 * kj)
            isa.store(c, 4 * PANEL * kj + 16 * half)


def _copy_step(c: Code, isa: Isa, stride: int) -> None:
    """Copy the 4 pixels of each half from ``src + tap`` and ``src2 + tap`` (every
    ``stride``-th float) to ``dst``."""
    for half, src in enumerate(("src", "src2")):
        c.get("dst", src, "tap").emit("i32.add")
        if stride == 1:
            isa.load(c)
        else:
            c.tee("t").emit("v128.load", 2, 0).get("t").emit("v128.load", 2, 12)
            c.emit("i8x16.shuffle", STRIDE2_HALF)
        isa.store(c, 16 * half)


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
