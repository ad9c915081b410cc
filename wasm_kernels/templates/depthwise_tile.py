"""The tiles of the depthwise family (see ``depthwise``): one output channel x ``regs``
registers of one output row, read from the zero-padded scratch plane, so no load is masked
(or, ``in_place``, from the input plane, the padding left of it zeroed in the register).

An unrolled kernel (``UNROLLED``) addresses every pixel register with a constant offset
from the kernel row's first pixel, each register of a row loaded once: at stride 1 a tap's
register is one shuffle of the two under it (``_shifted_taps``), at stride 2 of the three
under it (``_pair_taps``), and
a 3x3 kernel's weights stay in registers for the whole channel (larger ones load each weight
once per input row of a tile, for all its registers). Other kernels loop over the taps at run
time, loading a register contiguously at stride 1 and lane by lane otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from . import depthwise_quant
from .activations import apply
from .conv_tiles import EVEN_LANES, ODD_LANES
from .isa import ISAS, NamedFrame

REGS = 2
"""Registers of columns per tile: ``ROWS`` x 2 accumulators, a 3x3 kernel's 9 weights and
the pixels being loaded fit x86-64's 16 vector registers."""

Kernel: TypeAlias = "tuple[int, int, int]"
"""(k, sh, sw): a k x k kernel at stride (sh, sw), no dilation."""

UNROLLED: tuple[Kernel, ...] = ((3, 1, 1), (3, 2, 2), (5, 1, 1), (5, 2, 2), (7, 1, 1),
                                (3, 2, 1), (5, 2, 1), (3, 1, 2), (5, 1, 2))
"""The kernels with unrolled taps; (k, 2, 1) and (k, 1, 2): PP-OCR's recognisers and
text-line classifiers halve one side of the plane only."""

NEXT_LANE = [bytes(range(4, 16)) + bytes(range(16 + 4 * lane, 20 + 4 * lane))
             for lane in (0, 1)]
"""The ``i8x16.shuffle`` of registers (a, b) giving a's lanes 1..3 then b's lane 0 (1): the
stride-2 pixels of tap j + 2 from tap j's and the next register's."""

HOISTED_TAPS = 9
"""Kernels of at most this many taps keep their weights in registers across a channel."""

TileAt: TypeAlias = "Callable[[int, str], None]"
"""A tile at column ``tx`` of the current output rows: ``(regs, store)`` (see ``tile``)."""

ROWS = 2
"""Output rows per tile of an unrolled kernel: the rows share the input rows between them
(at stride 1, 4 input rows for 2 output rows of a 3x3 kernel), and their accumulators are
independent chains of multiply-adds."""


@dataclass
class Frame(NamedFrame):
    """The generated function's code, ISA, arguments and named i32 locals."""

    column_offset: list[int]
    """Locals holding ``k * sw * 4``: the byte offset of a row's k-th output column."""
    bias: int
    """The channel's bias in every lane."""
    quant: depthwise_quant.Quant | None = None
    """A quantized row's scales and zero points (None: f32 in and out)."""
    edges: tuple[int, int] = (-1, -1)
    """In-place rows: the v128 locals whose set lanes a tile zeroes in its first register
    at column 0 (left of the plane) and in the register after its last one when that one
    ends at ``ow`` (right of the plane)."""
    tile_edges: tuple[int, int] = (-1, -1)
    """In-place rows: the v128 locals of the current tile's two masks, ``edges``' where the
    tile is at that end of the row, else zero (one ``v128.andnot`` per register to zero, no
    select per input row)."""

    @property
    def shift(self) -> int:
        """log2 of the bytes of an input or output element."""
        return 0 if self.quant is not None else 2


def hoist_weights(f: Frame, kernel: Kernel | None) -> list[int]:
    """Load an unrolled kernel's weights (splat) into locals when it has at most
    ``HOISTED_TAPS`` taps; returns the locals (empty: load each where it is used)."""
    if kernel is None or kernel[0] * kernel[0] > HOISTED_TAPS:
        return []
    weights = []
    for tap in range(kernel[0] * kernel[0]):
        f.get("wc")
        f.isa.load_splat(f.c, 4 * tap)
        weights.append(f.c.local(f.isa.valtype))
        f.c.emit("local.set", weights[-1])
    return weights


def tile(f: Frame, kernel: Kernel | None, mode: str, weights: list[int],
         shape: tuple[int, int], store: str, in_place: bool = False,
         outside: tuple[int, int] = (0, 0)) -> None:
    """The tile of ``shape`` = (output rows, registers) at column ``tx`` of rows ``oy``...:
    accumulators from the bias, the taps, then the activations and the store: whole
    registers (``store=""``), lane by lane left of ``ow`` (``"lanes"``), or (``"narrow"``,
    two registers at column 0 of rows 5 to 7 wide) the first register and the row's last 4
    columns, one shuffle of the two (``_narrow``). ``in_place``: ``pbase`` is in the input plane
    itself (rows ``row`` bytes apart, starting ``pw`` columns left of the plane), and a
    tile zeroes the lanes left or right of the plane (``edges``), the padding. ``outside``:
    how many of the tile's first and last input rows lie above and below the plane (its top
    and bottom padding): their taps multiply a zero register, not loaded (the same bits as
    the scratch plane's zero rows)."""
    c, isa = f.c, f.isa
    rows, regs = shape
    acc = [[c.local(isa.valtype) for _ in range(regs)] for _ in range(rows)]
    for local in (a for row in acc for a in row):
        c.emit("local.get", f.bias).emit("local.set", local)
    if in_place:
        f.get("tx").emit("i32.eqz")
        f.set("left")
        f.get("tx").emit("i32.const", isa.lanes * regs).emit("i32.add")
        f.get("ow").emit("i32.eq")
        f.set("right")
    # pi = pbase + tx * sw * 4: the tile's first pixel in the first kernel row
    f.get("pbase", "tx")
    c.emit("local.get", f.column_offset[1]).emit("i32.mul").emit("i32.add")
    f.set("pi")
    if kernel is None:
        _runtime_taps(f, mode, acc[0])
    else:
        if in_place:
            # the tile's masks, chosen once: the plane's at the row's ends, else zero
            for side, flag in enumerate(("left", "right")):
                c.emit("local.get", f.edges[side]).emit("v128.const", bytes(16))
                f.get(flag).emit("select").emit("local.set", f.tile_edges[side])
        _unrolled_taps(f, kernel, weights, acc, (in_place, *outside))
        if in_place and rows > 1:
            _read_ahead(f, kernel[1] * kernel[2])
    for q, row in enumerate(acc):
        if store == "lanes":
            _store_lanes(f, row[0], q)
            continue
        for r, local in enumerate(row):
            narrow = store == "narrow" and r == 1
            f.get("yrow", "ow" if narrow else "tx")
            if narrow:
                c.emit("i32.const", isa.lanes).emit("i32.sub")
            c.emit("i32.const", f.shift).emit("i32.shl").emit("i32.add")
            if q:
                f.get("orow").emit("i32.add")
            if narrow:
                _narrow(f, row)
            else:
                c.emit("local.get", local)
            offset = 0 if narrow else isa.lanes * r
            for op in f.epilogue:
                apply(c, isa, op)
            if f.quant is None:
                isa.store(c, 4 * offset)
            else:
                depthwise_quant.store(f.quant, isa, offset)


def _narrow(f: Frame, registers: list[int]) -> None:
    """Push columns ``ow - 4 .. ow - 1`` of the two ``registers`` (columns 0..7), 4 < ``ow``
    < 8: one shuffle, chosen by ``ow``."""
    c, lanes = f.c, f.isa.lanes
    for width in range(lanes + 1, 2 * lanes - 1):
        f.get("ow").emit("i32.const", width).emit("i32.eq").emit("if", "v128")
        c.get(*registers).emit("i8x16.shuffle", bytes(range(4 * (width - lanes),
                                                            4 * width)))
        c.emit("else")
    c.get(*registers).emit("i8x16.shuffle", bytes(range(4 * (lanes - 1), 4 * (2 * lanes - 1))))
    for _ in range(lanes + 1, 2 * lanes - 1):
        c.emit("end")


def _unrolled_taps(f: Frame, kernel: Kernel, weights: list[int],
                   acc: list[list[int]], where: tuple[bool, int, int]) -> None:
    """Every tap with constant offsets, input row by input row (``pi`` steps one row of
    the scratch plane, or of the input plane ``in_place``): each pixel register loaded once
    and multiplied into every output row of the tile that reads it (rows ``sh`` apart,
    no row dilation). Hoisted ``weights`` run register by register; otherwise each weight
    is loaded once per input row for all the tile's registers (tap by tap). Either way an
    accumulator takes its taps in the same order. ``where``: (in place, the rows above and
    below the plane, whose taps multiply a zero register)."""
    c, isa = f.c, f.isa
    in_place, above, below = where
    zero = c.local(isa.valtype) if above or below else -1
    if above or below:
        c.emit("v128.const", bytes(16)).emit("local.set", zero)
    k, row_stride, stride = kernel
    pixel = c.local(isa.valtype)
    splat = [] if weights else [c.local(isa.valtype) for _ in acc]
    # a kernel row's first 4 weights, one load, each splat by a lane shuffle (``vpshufd``;
    # ``load_splat`` is a load and a ``vbroadcastss``)
    row = [c.local(isa.valtype) for _ in acc] if isa.vector and not weights else []
    span = (len(acc) - 1) * row_stride + k
    regs = range(len(acc[0]))
    groups = [[r] for r in regs] if weights else [list(regs)]
    for t in range(span):
        users = [(q, t - q * row_stride) for q in range(len(acc))
                 if 0 <= t - q * row_stride < k]
        loaded: dict[int, int] = {}
        for q, i in users if row else ():
            f.get("wc")
            isa.load(c, 4 * i * k)
            c.emit("local.set", row[q])
        for group in groups:
            pushers = [[lambda: c.emit("local.get", zero)] * k
                       if t < above or t >= span - below else
                       _taps(f, kernel, r, loaded,
                             (in_place and r == 0, in_place and r == len(regs) - 1))
                       for r in group]
            for j in range(k):
                weight = {}
                for q, i in users:
                    if weights:
                        weight[q] = weights[i * k + j]
                    else:
                        if row and j < isa.lanes:
                            c.get(row[q], row[q]).emit("i8x16.shuffle",
                                                       bytes(range(4 * j, 4 * j + 4)) * 4)
                        else:
                            f.get("wc")
                            isa.load_splat(c, 4 * (i * k + j))
                        c.emit("local.set", splat[q])
                        weight[q] = splat[q]
                for r, taps in zip(group, pushers):
                    if taps is not None:
                        taps[j]()
                    else:
                        f.get("pi")
                        isa.load(c, 4 * (isa.lanes * r * stride + j))
                    c.emit("local.set", pixel)
                    for q, _ in users:
                        c.get(pixel, weight[q])
                        isa.madd_into(c, acc[q][r])
        if t < span - 1:
            f.add("pi", "row" if in_place else "prow")


def _taps(f: Frame, kernel: Kernel, r: int, loaded: dict[int, int],
          edges: tuple[bool, bool]) -> list[Callable[[], None]] | None:
    """Register ``r``'s pusher per tap of ``kernel`` (None: no vector ISA, load lane by
    lane); ``edges``: in place, whether it is the tile's first and last register."""
    k, _, stride = kernel
    if not f.isa.vector:
        return None
    return (_pair_taps(f, r, k, loaded, edges) if stride == 2
            else _shifted_taps(f, r, k, loaded, edges))


def _read_ahead(f: Frame, lines: int) -> None:
    """Read one word of each of the next ``lines`` cache lines at ``ahead`` while they lie
    before ``aend`` (the next input plane), and move ``ahead`` past them: WebAssembly has no
    prefetch instruction, and a plane streaming from memory otherwise waits in the tiles'
    loads. A tile of several rows reads ``sh * sw`` lines ahead: about the lines of its own
    plane it takes (a 112-wide plane's 784 lines over its 196 such tiles at stride 2, over
    its 784 at stride 1)."""
    c = f.c
    f.get("ahead").emit("i32.const", 64 * lines).emit("i32.add")
    f.get("aend").emit("i32.le_u").emit("if")
    for line in range(lines):
        f.get("ahead").emit("i32.load", 2, 64 * line).emit("drop")
    f.add("ahead", 64 * lines)
    c.emit("end")


def _load_once(f: Frame, column: int, loaded: dict[int, int]) -> int:
    """The local holding the register at ``column`` of the row at ``pi``, loaded on first
    use."""
    if column not in loaded:
        loaded[column] = f.c.local(f.isa.valtype)
        f.get("pi")
        f.isa.load(f.c, 4 * column)
        f.c.emit("local.set", loaded[column])
    return loaded[column]


def _shifted_taps(f: Frame, r: int, k: int, loaded: dict[int, int], edges: tuple[bool, bool]
                  ) -> list[Callable[[], None]]:
    """At stride 1, register ``r``'s pixels of taps 0..k-1 from the registers at columns
    4r, 4r + 4, 4r + 8 (each loaded once, shared with the registers r + 1, r + 2): tap j is
    the register at 4r + 4 (j // 4) when 4 divides j, else its lanes j % 4.. then the next
    register's first lanes, one shuffle (``palignr``). Each pusher pushes one tap's
    register. ``edges`` (in place, 3x3 and 5x5: the tile's first and last register): the
    first one's register at 4r has the lanes left of the input plane zeroed when ``left``,
    the last one's at 4r + 4 those right of it when ``right``."""
    c = f.c
    fresh = 4 * r not in loaded
    first = _load_once(f, 4 * r, loaded)
    if edges[0] and fresh:
        _zero_edge(f, first, "left")
    if edges[1]:
        _zero_edge(f, _load_once(f, 4 * r + 4, loaded), "right")

    def tap(j: int) -> Callable[[], None]:
        def push() -> None:
            base, shift = 4 * r + 4 * (j // 4), j % 4
            a = _load_once(f, base, loaded)
            if shift == 0:
                c.emit("local.get", a)
                return
            b = _load_once(f, base + 4, loaded)
            c.get(a, b).emit("i8x16.shuffle", bytes(range(4 * shift, 4 * shift + 16)))
        return push

    return [tap(j) for j in range(k)]


def _pair_taps(f: Frame, r: int, k: int, loaded: dict[int, int], edges: tuple[bool, bool]
               ) -> list[Callable[[], None]]:
    """At stride 2, register ``r``'s pixels of taps 0..k-1 from the three registers at
    columns 8r, 8r + 4 and 8r + 8 of the row (A, B, C; C is register r + 1's A, loaded
    once): tap 0 the even lanes of A, B, tap 1 the odd ones, tap 2 (4) those shifted one
    lane on with C's first (second) lane, tap 4 the even lanes of B, C. Each pusher
    pushes one tap's register. ``edges`` (in place, the tile's first and last register):
    the first one's A has the lanes left of the input plane zeroed when ``left``, the last
    one's C (a 5x5 kernel's) those right of it when ``right``."""
    c, isa = f.c, f.isa
    fresh = 8 * r not in loaded
    a, b, next_a = (_load_once(f, column, loaded) for column in (8 * r, 8 * r + 4, 8 * r + 8))
    for register, edge, flag in ((a, edges[0] and fresh, "left"),
                                 (next_a, edges[1] and k > 3, "right")):
        if edge:
            _zero_edge(f, register, flag)
    even, odd = c.local(isa.valtype), c.local(isa.valtype)

    def lanes(first: int, second: int, pattern: bytes, keep: int = -1) -> Callable[[], None]:
        def push() -> None:
            c.get(first, second).emit("i8x16.shuffle", pattern)
            if keep >= 0:
                c.emit("local.tee", keep)
        return push

    return [lanes(a, b, EVEN_LANES, even), lanes(a, b, ODD_LANES, odd),
            lanes(even, next_a, NEXT_LANE[0]), lanes(odd, next_a, NEXT_LANE[1]),
            lanes(b, next_a, EVEN_LANES)][:k]


def _zero_edge(f: Frame, register: int, flag: str) -> None:
    """Zero the lanes of ``register`` left (``flag`` "left") or right ("right") of the input
    plane when the tile is at that end of its row (``Frame.tile_edges``)."""
    mask = f.tile_edges[flag == "right"]
    f.c.get(register, mask).emit("v128.andnot").emit("local.set", register)


def _runtime_taps(f: Frame, mode: str, acc: list[int]) -> None:
    """Loops over the kh kernel rows and kw taps; per tap one weight and ``regs`` pixel
    registers: contiguous (``unit``), or lane by lane at the stride (``gather``)."""
    c, isa = f.c, f.isa
    weight = c.local(isa.valtype)
    f.get("wc")
    f.set("wi")
    f.get("kh")
    f.set("i")
    c.emit("loop")
    f.get("pi")
    f.set("pj")
    f.get("kw")
    f.set("j")
    c.emit("loop")
    f.get("wi")
    isa.load_splat(c)
    c.emit("local.set", weight)
    for r, local in enumerate(acc):
        if mode == "unit":
            f.get("pj")
            isa.load(c, 16 * r)
        else:
            _gather(f, r)
        c.emit("local.get", weight)
        isa.madd_into(c, local)
    f.add("wi", 4)
    f.add("pj", "dw", 4)
    f.add("j", -1)
    f.get("j").emit("br_if", 0).emit("end")
    f.add("pi", "dh", "prow")
    f.add("i", -1)
    f.get("i").emit("br_if", 0).emit("end")


def _gather(f: Frame, r: int) -> None:
    """Push register ``r``'s pixels of the tap at ``pj``, one lane at a time."""
    c, isa = f.c, f.isa
    for lane in range(isa.lanes):
        f.get("pj").emit("local.get", f.column_offset[isa.lanes * r + lane]).emit("i32.add")
        c.emit("f32.load", 2, 0)
        if lane == 0:
            isa.splat(c)
        else:
            c.emit("f32x4.replace_lane", lane)


def _store_lanes(f: Frame, acc: int, row: int) -> None:
    """Store the lanes of a register at column 0 of output row ``oy + row`` that lie left
    of ``ow``."""
    c, scalar = f.c, ISAS["scalar"]
    for lane in range(f.isa.lanes):
        if lane:
            f.get("ow").emit("i32.const", lane).emit("i32.gt_u").emit("if")
        f.get("yrow")
        if row:
            f.get("orow").emit("i32.add")
        c.emit("local.get", acc).emit("f32x4.extract_lane", lane)
        for op in f.epilogue:
            apply(c, scalar, op)
        if f.quant is None:
            scalar.store(c, 4 * lane)
        else:
            depthwise_quant.store(f.quant, scalar, lane)
        if lane:
            c.emit("end")
