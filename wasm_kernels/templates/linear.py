"""The linear family: C(m, n) = epilogue(A(m, k) @ W(n, k).T [+ bias] [+ R]), row-major f32.

W is ``nn.Linear``'s weight, packed at compile time (``wasm_kernels.pack``) in panels of
``PANEL`` rows, a step of k's ``PANEL`` weights adjacent: W.T in the panel layout the
outer-product tile of ``dense_tile`` reads at constant offsets. The last panel is padded
with zero rows, so every tile is ``PANEL`` columns wide; the one past ``n`` stores only its
columns before ``n``.

The driver blocks A by rows so a block stays in L2 (``BLOCK_BYTES``): it first packs each
tile's group of 4 rows into the scratch ``wa``, step-major where it lies in A (so callers
that split rows across threads pack disjoint bytes), then each panel of W stays in L1 (for k
up to ~1000) while the block's row tiles stream past it: ``MR`` rows (the relaxed tile's
fifth row read in place), and the rows left over (``_tile_runs``). Blocking W instead
(panels innermost) measured ~10% slower; blocking k as well (256 steps) and blocks of 64 or
256 KiB measured no faster. While a panel's packed tiles run, they read one float per cache
line of the next panel, a few lines per unrolled iteration (``_read_ahead``): wasm has no
prefetch instruction, and a panel that only ``m / 4`` tiles reuse (8 in the MLP) otherwise
waits on memory in its first tile.

Rows of the family: ``f32_linear[_bias][_add][_<activation>]``.
"""


from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from ..abi import KernelSpec
from ..pack import PANEL
from ..wasm import Code, FuncType
from .dense_store import row_address
from .dense_tile import GROUP, DenseFrame, Taps, tile
from .isa import ISAS
from .loops import strided_loop

MR = {"relaxed": 5, "simd128": 4, "scalar": 1}
"""Rows of A per tile, by ISA: a SIMD tile's first 4 rows are packed (one register per step
of k, see ``dense_tile``). The relaxed tile reads a fifth row in place (10 accumulators:
FMA chains to spare over the 8 that two FMA pipes of 4 cycles' latency need); with mul + add
the FP ports are the bound and 5 rows run no faster than 4 (wider tiles do: ``WIDE``). The
scalar reference keeps its ``PANEL`` accumulators in registers with one row and reads A in
place."""

WIDE = {"simd128": 3}
"""Adjacent panels of W per tile of packed rows, by ISA, where more than one. With mul + add
(no FMA) the FP ports run the two ops of every update beside the shuffles that broadcast
A, one per row and step: a 2 x 24 pass (``dense_tile.PASS_ROWS`` rows of a packed group, 12
accumulators) needs one shuffle per 12 updates where 4 x 8 needs one per 2, and ran 8-15%
faster on the MiniLM shapes (bench/README.md). The columns past the last group of panels
run in 4 x 8 tiles."""

AHEAD_LINES = 4
"""Cache lines of the next panel of W a tile reads ahead per unrolled iteration of k."""

TAIL = 4
"""Columns of the narrower tile that ends a W read in place (``row_blocks``): one register,
half a panel's multiply-adds for the last ``n % PANEL <= TAIL`` columns (a 7x7 conv's 49th
pixel)."""

BLOCK_BYTES = 1 << 17
"""Bytes of A per block: a quarter of a 512 KiB L2, so it stays there while W streams by."""

SPLIT_ROWS = 12
"""Rows from which every count is tiles of 5 and 4 (``_split``); under it a block of the
5-row tile may leave single rows, a quarter as fast (2 FMA chains)."""


@dataclass
class _Frame(DenseFrame):
    """A dense frame with the block of A the driver is in: its first row ``ib``, its end
    ``iend`` and its height ``mb``; ``ahead`` .. ``ahead_end``, the bytes of the next panel
    of W still to read ahead."""

    ib: int
    iend: int
    mb: int
    ahead: int
    ahead_end: int
    mr: int
    """Rows per tile of packed A."""
    split: int
    """With ``mr > GROUP``: where the block's tiles of ``mr`` rows end and those of ``GROUP``
    begin (``_split``)."""
    taps: Taps | None = None
    """W read in place as a conv's input (``dense_tile.Taps``), with ``ldb`` set."""


def variant(isa: str) -> str:
    """The variant suffix of linear kernels for ``isa``, e.g. ``relaxed_4x8``."""
    return f"{isa}_{MR[isa]}x{PANEL}"


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate linear kernel ``spec`` for ``isa_name``."""
    c = Code(spec.param_types)
    f = frame(c, isa_name, {p: i for i, p in enumerate(spec.params)}, spec.activations)
    row_blocks(f, edge=True)
    return FuncType(spec.param_types, spec.results), c


def frame(c: Code, isa_name: str, arg: dict[str, int], epilogue: tuple[str, ...],
          mr: int | None = None) -> _Frame:
    """The frame of a linear driver over ``arg``'s ``a``, ``w`` (packed panels), ``c``,
    ``m``, ``k`` and ``n``, with its strides and block height computed; tiles of ``mr``
    packed rows (by default ``MR`` of the ISA)."""
    i, j, lda, ldc, ib, iend, mb, ahead, ahead_end, split = (c.local("i32") for _ in range(10))
    mr = MR[isa_name] if mr is None else mr
    if mr > GROUP + 1:
        raise ValueError(f"tiles of {mr} rows: at most {GROUP + 1} (a packed group and a row)")
    f = _Frame(c, ISAS[isa_name], arg, epilogue, i, j, lda, ldc, None, ib, iend, mb, ahead,
               ahead_end, mr, split)
    # lda = k * 4, ldc = n * 4: the byte strides of A's and C's rows.
    c.emit("local.get", arg["k"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.lda)
    c.emit("local.get", arg["n"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.ldc)
    # mb = max(MR, BLOCK_BYTES / lda rounded down to MR): rows of A per block (| 1 avoids 0).
    c.emit("i32.const", BLOCK_BYTES).emit("local.get", f.lda).emit("i32.const", 1).emit("i32.or")
    c.emit("i32.div_u").emit("local.tee", f.mb).emit("local.get", f.mb).emit("i32.const", mr)
    c.emit("i32.rem_u").emit("i32.sub").emit("local.tee", f.mb)
    c.emit("i32.const", mr).emit("local.get", f.mb).emit("i32.const", mr).emit("i32.gt_u")
    c.emit("select").emit("local.set", f.mb)
    return f


def row_blocks(f: _Frame, edge: bool, prepacked: bool = False,
               narrow: tuple[int, Callable[[], None]] | None = None,
               fill: Callable[[], None] | None = None) -> None:
    """C's columns in whole panels (and with ``edge`` the padded last one) against A's row
    blocks; ``f.j`` ends at the first column not computed. A ``prepacked`` A is already in
    ``wa``'s layout for the tiles this driver runs (``pack_im2col.tiles``). With
    ``f.ldb`` set, W is read in place as a row-major (k, n) B of that row stride in bytes
    (a pointwise conv's input planes) instead of packed panels, ``n >= PANEL``: columns past
    the whole panels are computed by one more tile ending at ``n``, ``TAIL`` columns wide
    when that covers them, else ``PANEL``; it stores again the columns before them it
    overlaps, the same values as long as C overlaps neither A, W nor R. ``fill`` runs
    before each whole panel's tiles, with ``j`` set (the gemm packs its panel of B there)."""
    c, arg = f.c, f.arg

    def block() -> None:
        if f.mr > GROUP:
            # iend = m - ib < mb + SPLIT_ROWS ? m : ib + mb: the last rows join the block
            # before them, so no block but a lone one has fewer than SPLIT_ROWS rows
            c.emit("local.get", arg["m"])
            c.emit("local.get", f.ib).emit("local.get", f.mb).emit("i32.add")
            c.emit("local.get", arg["m"]).emit("local.get", f.ib).emit("i32.sub")
            c.emit("local.get", f.mb).emit("i32.const", SPLIT_ROWS).emit("i32.add")
            c.emit("i32.lt_u").emit("select").emit("local.set", f.iend)
            _split(f)
        else:
            # iend = min(ib + mb, m): the block's rows end
            c.emit("local.get", f.ib).emit("local.get", f.mb).emit("i32.add")
            c.emit("local.tee", f.iend).emit("local.get", arg["m"]).emit("local.get", f.iend)
            c.emit("local.get", arg["m"]).emit("i32.lt_u").emit("select").emit("local.set", f.iend)
        if f.mr > 1 and not prepacked:
            # each tile's group of GROUP rows, packed where it lies in A
            c.emit("local.get", f.ib).emit("local.set", f.i)
            for rows, end in _tile_runs(f)[:2 if f.mr > GROUP else 1]:
                strided_loop(c, f.i, rows, end, partial(_pack_rows, f))
        c.emit("i32.const", 0).emit("local.set", f.j)
        wide = WIDE.get(f.isa.name, 1) if f.ldb is None and not prepacked else 1
        if wide > 1:
            strided_loop(c, f.j, wide * PANEL, arg["n"],
                         partial(_column_tiles, f, False, prepacked, fill=fill, panels=wide))
        strided_loop(c, f.j, PANEL, arg["n"],
                     partial(_column_tiles, f, False, prepacked, fill=fill))
        if edge:
            c.emit("local.get", f.j).emit("local.get", arg["n"]).emit("i32.lt_u").emit("if")
            _column_tiles(f, True, prepacked)
            c.emit("end")
        elif f.ldb is not None:
            _end_tile(f, prepacked, narrow)
        c.emit("local.get", f.iend).emit("local.set", f.ib)

    c.emit("i32.const", 0).emit("local.set", f.ib)
    c.emit("block").emit("loop")
    c.emit("local.get", f.ib).emit("local.get", arg["m"]).emit("i32.ge_u").emit("br_if", 1)
    block()
    c.emit("br", 0).emit("end").emit("end")


def _split(f: _Frame) -> None:
    """``split``: the block's ``r = iend - ib`` rows as ``a`` tiles of ``mr = GROUP + 1`` rows
    then ``b`` of ``GROUP`` (``r = 5a + 4b`` with ``b = -r mod 5``, which every ``r >=
    SPLIT_ROWS`` has), else (``4b > r``) none of ``mr`` rows: then tiles of ``GROUP`` rows and
    at most 3 single rows, only when ``m`` is under ``SPLIT_ROWS`` (a block of ``mb`` rows
    is whole tiles of 5, and the last rows join the block before them)."""
    c = f.c
    b = c.local("i32")
    # b * GROUP = (mr - r % mr) % mr * GROUP
    c.emit("i32.const", f.mr).emit("local.get", f.iend).emit("local.get", f.ib).emit("i32.sub")
    c.emit("i32.const", f.mr).emit("i32.rem_u").emit("i32.sub").emit("i32.const", f.mr)
    c.emit("i32.rem_u").emit("i32.const", GROUP).emit("i32.mul").emit("local.set", b)
    # split = b * GROUP <= r ? iend - b * GROUP : ib
    c.emit("local.get", f.iend).emit("local.get", b).emit("i32.sub").emit("local.get", f.ib)
    c.emit("local.get", b).emit("local.get", f.iend).emit("local.get", f.ib).emit("i32.sub")
    c.emit("i32.le_u").emit("select").emit("local.set", f.split)


def _tile_runs(f: _Frame, edge: bool = False, prepacked: bool = False) -> list[tuple[int, int]]:
    """(rows, end): the tiles of the block, tallest first, each run while its rows fit before
    the local ``end``: ``mr`` rows (with ``mr > GROUP`` up to ``split``, then ``GROUP`` rows),
    then single rows read in place. An ``edge`` panel (past ``n``: once per block) runs
    single rows only (every tile stores its columns one by one, with the epilogue on each,
    and those tiles were half of a kernel's code), unless A is ``prepacked``: then only the
    tiles it is packed for can read it. With ``taps`` (a conv's input read in place, at
    least ``SPLIT_ROWS`` rows), no single rows."""
    if f.taps:
        return [(f.mr, f.split), (GROUP, f.iend)]
    if edge and f.mr > GROUP and not prepacked:
        return [(1, f.iend)]
    if f.mr > GROUP:
        return [(f.mr, f.split), (GROUP, f.iend), (1, f.iend)]
    return [(rows, f.iend) for rows in sorted({f.mr, 1}, reverse=True)]


def _end_tile(f: _Frame, prepacked: bool,
              narrow: tuple[int, Callable[[], None]] | None) -> None:
    """With W in place, the columns ``j .. n`` short of a panel: ``narrow``'s columns when
    there are few enough, else the tile of ``TAIL`` or ``PANEL`` columns ending at ``n``
    (``j`` set to its first)."""
    c, n = f.c, f.arg["n"]
    c.emit("local.get", f.j).emit("local.get", n).emit("i32.lt_u").emit("if")
    if narrow is not None:
        limit, columns = narrow
        c.emit("local.get", n).emit("local.get", f.j).emit("i32.sub").emit("i32.const", limit)
        c.emit("i32.le_u").emit("if")
        columns()
        c.emit("else")
    c.emit("local.get", n).emit("local.get", f.j).emit("i32.sub").emit("i32.const", TAIL)
    c.emit("i32.le_u").emit("if")
    c.emit("local.get", n).emit("i32.const", TAIL).emit("i32.sub").emit("local.set", f.j)
    _column_tiles(f, False, prepacked, TAIL)
    c.emit("else")
    c.emit("local.get", n).emit("i32.const", PANEL).emit("i32.sub").emit("local.set", f.j)
    _column_tiles(f, False, prepacked)
    c.emit("end").emit("end")
    if narrow is not None:
        c.emit("end")


def _column_tiles(f: _Frame, edge: bool, prepacked: bool, width: int = PANEL,
                  fill: Callable[[], None] | None = None, panels: int = 1) -> None:
    """Columns ``j .. j+width*panels`` of C (``panels`` adjacent panels of W; an ``edge``
    panel ends past ``n``) against the block's rows (``_tile_runs``; A ``prepacked`` or
    not), after ``fill`` (if any)."""
    c = f.c
    if fill is not None:
        fill()
    # NOTE: W in place: a panel's next columns are in the cache lines it reads already.
    packed_w = f.ldb is None
    if packed_w:
        _next_panel(f, panels)
    c.emit("local.get", f.ib).emit("local.set", f.i)
    for rows, end in _tile_runs(f, edge, prepacked):
        # NOTE: single rows (m < MR, or the rows past the packed ones) only stream W; reading
        # ahead there measured 5-7% slower at m = 1.
        packed = partial(_packed_rows, f) if rows >= GROUP else None
        ahead = partial(_read_ahead, f) if rows >= GROUP and packed_w else None
        strided_loop(c, f.i, rows, end,
                     partial(tile, f, f.isa, rows, width * panels, partial(_panel, f), edge,
                             packed, ahead, f.taps, panels))


def _next_panel(f: _Frame, panels: int = 1) -> None:
    """``ahead .. ahead_end`` = the next ``panels`` whole panels of W (``j + 2 * panels *
    PANEL <= n``), else empty."""
    c, arg = f.c, f.arg
    width = panels * PANEL
    c.emit("i32.const", 0).emit("local.tee", f.ahead).emit("local.set", f.ahead_end)
    c.emit("local.get", f.j).emit("i32.const", 2 * width).emit("i32.add")
    c.emit("local.get", arg["n"]).emit("i32.le_u").emit("if")
    # ahead = w + (j + width) * k * 4; ahead_end = ahead + width * k * 4
    c.emit("local.get", arg["w"]).emit("local.get", f.j).emit("i32.const", width)
    c.emit("i32.add").emit("local.get", f.lda).emit("i32.mul").emit("i32.add")
    c.emit("local.tee", f.ahead).emit("local.get", f.lda).emit("i32.const", width)
    c.emit("i32.mul").emit("i32.add").emit("local.set", f.ahead_end)
    c.emit("end")


def _read_ahead(f: _Frame) -> None:
    """Read one float of each of the next ``AHEAD_LINES`` cache lines of the next panel of
    W while the tiles of this one compute, so that its first tile finds it in cache instead
    of waiting on memory (a panel is reused by ``m / MR`` tiles only, 8 at the MLP's
    m = 32: too few to hide that wait)."""
    c = f.c
    # while ahead + the bytes read (up to the last line's float) <= ahead_end: within W
    c.emit("local.get", f.ahead).emit("i32.const", 64 * (AHEAD_LINES - 1) + 4).emit("i32.add")
    c.emit("local.get", f.ahead_end).emit("i32.le_u").emit("if")
    for line in range(AHEAD_LINES):
        c.emit("local.get", f.ahead).emit("i32.load", 2, 64 * line).emit("drop")
    c.emit("local.get", f.ahead).emit("i32.const", 64 * AHEAD_LINES).emit("i32.add")
    c.emit("local.set", f.ahead)
    c.emit("end")


def _packed_rows(f: _Frame) -> None:
    """Push the address of rows ``i .. i+MR`` of A packed: ``wa + i * k * 4``."""
    f.c.emit("local.get", f.arg["wa"]).emit("local.get", f.i).emit("local.get", f.lda)
    f.c.emit("i32.mul").emit("i32.add")


def _lanes(*lanes: int) -> bytes:
    """The ``i8x16.shuffle`` pattern taking f32 ``lanes`` (0-3 of the first operand, 4-7 of
    the second)."""
    return bytes(4 * lane + byte for lane in lanes for byte in range(4))


_TRANSPOSE = ((_lanes(0, 4, 1, 5), _lanes(2, 6, 3, 7)), (_lanes(0, 1, 4, 5), _lanes(2, 3, 6, 7)))
"""A 4x4 transpose in two rounds of shuffles: interleave rows (0, 1) and (2, 3), then take
the halves of the interleaved pairs."""


def _pack_rows(f: _Frame) -> None:
    """Copy rows ``i .. i+4`` of A to ``wa`` where they lie in A, step-major: step ``kk`` of
    row ``r`` at float ``kk * 4 + r``, so a tile loads a step of all its rows at once. Four
    steps of the four rows are one load per row, transposed in registers; the ``k % 4`` last
    steps are copied float by float."""
    c, arg = f.c, f.arg
    src = [c.local("i32") for _ in range(4)]
    dst, left = c.local("i32"), c.local("i32")
    rows = [c.local("v128") for _ in range(4)]
    pairs = [c.local("v128") for _ in range(4)]
    for r in range(4):
        row_address(c, arg["a"], f.i, r, f.lda)
        c.emit("local.set", src[r])
    _packed_rows(f)
    c.emit("local.set", dst)

    def counted(count: int, body: Callable[[], None]) -> None:
        # body() `left` times, with left = k >> 2 (count 4) or k & 3 (count 1)
        c.emit("local.get", arg["k"])
        if count == 4:
            c.emit("i32.const", 2).emit("i32.shr_u")
        else:
            c.emit("i32.const", 3).emit("i32.and")
        c.emit("local.tee", left).emit("if").emit("loop")
        body()
        for pointer in src:
            c.emit("local.get", pointer).emit("i32.const", 4 * count).emit("i32.add")
            c.emit("local.set", pointer)
        c.emit("local.get", dst).emit("i32.const", 16 * count).emit("i32.add")
        c.emit("local.set", dst)
        c.emit("local.get", left).emit("i32.const", 1).emit("i32.sub").emit("local.tee", left)
        c.emit("br_if", 0).emit("end").emit("end")

    def four_steps() -> None:
        for pointer, row in zip(src, rows):
            c.emit("local.get", pointer).emit("v128.load", 2, 0).emit("local.set", row)
        interleave, halves = _TRANSPOSE
        for k, (first, second) in enumerate(((0, 1), (2, 3), (0, 1), (2, 3))):
            c.emit("local.get", rows[first]).emit("local.get", rows[second])
            c.emit("i8x16.shuffle", interleave[k // 2]).emit("local.set", pairs[k])
        for k, (first, second) in enumerate(((0, 1), (0, 1), (2, 3), (2, 3))):
            c.emit("local.get", dst)
            c.emit("local.get", pairs[first]).emit("local.get", pairs[second])
            c.emit("i8x16.shuffle", halves[k % 2]).emit("v128.store", 2, 16 * k)

    def one_step() -> None:
        for r, pointer in enumerate(src):
            c.emit("local.get", dst).emit("local.get", pointer).emit("f32.load", 2, 0)
            c.emit("f32.store", 2, 4 * r)

    counted(4, four_steps)
    counted(1, one_step)


def _panel(f: _Frame) -> None:
    """Push the address of the packed panel of column ``j``: ``w + j * k * 4`` (in place,
    ``w + j * 4``)."""
    f.c.emit("local.get", f.arg["w"]).emit("local.get", f.j)
    if f.ldb is None:
        f.c.emit("local.get", f.lda).emit("i32.mul")
    else:
        f.c.emit("i32.const", 2).emit("i32.shl")
    f.c.emit("i32.add")
