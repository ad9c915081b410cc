"""The outer-product micro-kernel of the dense families (``linear``, ``gemm``, ``bmm``).

A tile of C, ``rows`` x ``width`` floats, lives in ``rows * width / lanes`` accumulators.
Per step of k the tile loads one row of its B panel (``width`` floats: two registers),
broadcasts ``A[i + r, kk]`` for each of its rows and multiply-adds. The broadcast is an
``i8x16.shuffle`` of one lane (``vpshufd``: one instruction, where ``v128.load32_splat``
costs three), out of one of two layouts of A:

- packed (``a_panel``, ``f32_linear`` and ``f32_gemm``): the driver copies 4 rows of A
  step-major into scratch, so one ``v128.load`` brings a step of all 4 rows: a 4 x 8 tile
  in 8 accumulators, with 2 registers of B, the step's A, a broadcast and the copy
  ``vfmadd213ps`` needs (13 of the 16 XMM registers). Eight independent chains of
  multiply-adds is exactly what the FMA pipes need (2 per cycle, 4 cycles of latency), with
  nothing to spare. The relaxed ``f32_linear`` tile adds a fifth row read in place, one
  ``f32.load`` + ``f32x4.splat`` per step (``vmovss`` + ``vbroadcastss``): 10 chains in 15
  registers (a few stack slots at the loop's edges), 12-19% faster on an Intel Xeon
  (bench/README.md, Issue #12 on the Intel machine). With mul + add (simd128) the FP ports
  run both ops of every update beside the shuffles, one per row and step, so its tile
  spans ``panels`` = 3 panels of B: a group's rows in two passes of 2 x 24 (12
  accumulators), one shuffle per 12 updates instead of per 2 (``linear.WIDE``).
  The scalar ISA reads the same packed steps float by float (``f32_conv2d_gemm``'s weight);
- in place (``f32_bmm``, and rows left over): one ``v128.load`` brings four steps of one
  row, which keeps its register of A across them (``QUAD_ROWS`` rows), and the rows past
  those broadcast one ``f32.load`` per step: a 4 x 8 tile, 8 accumulators, no spill (3 x 8,
  every row by quads, had 6 accumulators, which the FMA latency bounds at 75% of the peak;
  f32_bmm 4 x 8 over 3 x 8: relaxed 1.12-1.25, simd128 0.99-1.07 on attention shapes).

B is either a panel packed at compile time or by ``f32_gemm`` (a step's ``width`` floats
adjacent, so steps are constant offsets) or a row-major activation (each step one row stride
further).

The k loop is unrolled ``UNROLL`` times, in the order the steps should run, and the module
holding these kernels is compiled at cranelift's opt level ``"none"``
(``build.FAMILY_OPT_LEVELS``): at ``"speed"`` the e-graph pass sinks the pure ops of an
unrolled body (shuffles, multiply-adds) to their first use while the loads keep program
order, so all loads come first and the accumulators spill; at ``"none"`` the written order
is kept and 32 unrolled steps run without a spill (bench/README.md). The loop back-edge is
where epoch interruption and fuel check their limit, and since that check may call out of
wasm cranelift keeps the accumulators in stack slots across it (a reload and a store of each
per iteration, on the multiply-add chains): 32 steps rather than 16 halve that, which took
MiniLM under a timeout from +15% to +9% and under fuel from +14% to +9%, at the same speed
without limits. With relaxed SIMD the multiply-add is ``f32x4.relaxed_madd``
(``vfmadd213ps``), which leaves an FP pipe free for the shuffles that mul + add saturates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .conv_tiles import LANE_BROADCAST
from .dense_store import row_address, store, store_columns
from .isa import Isa, KernelFrame

UNROLL = 32
"""Steps of k per loop iteration (a power of two); the ``k % UNROLL`` last run by ``MID``."""

MID = 8
"""Steps per iteration of a second unrolled loop over the ``k % UNROLL`` steps left (a power
of two, a multiple of 4); the ``k % MID`` last run one by one. At k = 24 (a pointwise conv
from 24 channels), where the ``UNROLL`` loop never runs, single steps, each with its loop
count, branch and pointer bumps, ran the relaxed ``f32_linear`` at 25-31 GFLOPS against
35-44 with this loop (bench/README.md, "1x1 convs")."""

GROUP = 4
"""Rows of A a packed panel holds per step of k: one register of a SIMD ISA."""

PASS_ROWS = 2
"""Rows of a packed group per pass of a tile wider than one panel: the simd128 tile over 3
panels (2 x 24: 12 accumulators) runs its group's rows in two passes."""

QUAD_ROWS = 2
"""Rows of A read in place that load four steps at once (a register each, broadcast lane by
lane); the rows past them broadcast one ``f32.load`` per step, which holds no register
across steps. A 4x8 tile in place so keeps 8 accumulators, 2 registers of B, 2 of A and a
broadcast with its copy: no spill, where 3 rows of quads spilled 68 times per 256 FMAs (and
4 rows more), and 3x8's 6 accumulators left the FMA pipes idle a quarter of the time."""


@dataclass
class DenseFrame(KernelFrame):
    """Locals of a dense kernel: the tile's corner (``i``, ``j``), A's and C's row strides in
    bytes, and B's: a local for a row-major B, ``None`` for a packed panel of ``width``
    floats per step."""

    i: int
    j: int
    lda: int
    ldc: int
    ldb: int | None


TAP_KERNEL = 3
"""Kernel rows and columns of a conv whose input B is read in place (``Taps``)."""

TAP_CHANNELS = 3
"""Input channels per iteration of the k loop over ``Taps`` (27 steps; the rest one channel,
9 steps, at a time)."""


@dataclass(frozen=True)
class Taps:
    """B read in place as a 3x3 conv's input planes (column stride and dilation 1): step
    ``(ci, ki, kj)`` of a column at ``b_start + ci * plane + ki * row + kj * 4`` bytes, so the
    columns of a panel are adjacent pixels of one output row and nothing is packed. With
    ``odd``, at column stride 2 in phased rows (a row's even columns, then its odd ones):
    taps 0 and 2 of a kernel row at 0 and 4 bytes, tap 1 ``odd`` bytes on. The fields are i32
    locals."""

    channels: int
    """Input channels: k = 9 * channels."""
    plane: int
    """Bytes from one input plane to the next."""
    row: int
    """Bytes from one kernel row's taps to the next (the dilation times a row)."""
    odd: int | None = None
    """Bytes from a phased row's even columns to its odd ones (column stride 2)."""


def tile(f: DenseFrame, isa: Isa, rows: int, width: int, b_start: Callable[[], None],
         edge: bool = False, a_panel: Callable[[], None] | None = None,
         touch: Callable[[], None] | None = None, taps: Taps | None = None,
         panels: int = 1) -> None:
    """C[i:i+rows, j:j+width] = epilogue(A[i:i+rows] @ B[:, j:j+width] [+ bias] [+ R]).

    ``b_start`` pushes the address of B's first step for column ``j``. An ``edge`` tile
    stores only the columns before ``n``, one by one (its B panel is padded). ``a_panel``
    pushes the address of the tile's first ``GROUP`` rows of A packed step-major (a step's A
    is one register); the rows past them, and without it every row, are read in place.
    ``touch`` emits code run once per unrolled iteration (the driver's reads ahead of what
    later tiles need). With ``taps``, B is a conv's input read in place (``Taps``). With
    ``panels`` > 1, B is that many adjacent packed panels (``width / panels`` floats a step,
    ``k`` steps each), and a packed group's rows run ``PASS_ROWS`` at a time.
    """
    c, arg = f.c, f.arg
    regs = width // isa.lanes
    height = PASS_ROWS if panels > 1 and rows > PASS_ROWS else rows
    acc = [[c.local(isa.valtype) for _ in range(regs)] for _ in range(height)]
    first = GROUP if a_panel else 0
    # pa: the packed group's pointer (with a_panel), then one per row read in place
    pa = [c.local("i32") for _ in range((1 if a_panel else 0) + rows - first)]
    pbs, steps = [c.local("i32") for _ in range(panels)], c.local("i32")
    for top in range(0, rows, height):
        if a_panel:
            a_panel()
            c.emit("local.set", pa[0])
        for pointer, r in zip(pa[1 if a_panel else 0:], range(first, rows)):
            row_address(c, arg["a"], f.i, r, f.lda)
            c.emit("local.set", pointer)
        b_start()
        c.emit("local.set", pbs[0])
        for previous, pointer in zip(pbs, pbs[1:]):
            # the next panel: width / panels floats a step, k * 4 = lda bytes per float
            c.emit("local.get", previous).emit("local.get", f.lda)
            c.emit("i32.const", width // panels).emit("i32.mul").emit("i32.add")
            c.emit("local.set", pointer)
        for row in acc:
            for register in row:
                isa.const(c, 0.0)
                c.emit("local.set", register)
        step = _Step(f, isa, acc, pa, pbs, packed=a_panel is not None, taps=taps, top=top)
        if taps is None:
            _k_loops(f, step, steps, touch)
        else:
            _tap_loops(f, step, steps, taps)
        for r, row in enumerate(acc, top):
            if edge:
                store_columns(f, isa, r, row, width)
            else:
                for v, register in enumerate(row):
                    c.emit("local.get", register)
                    store(f, isa, r, 4 * isa.lanes * v)


def _k_loops(f: DenseFrame, step: _Step, steps: int, touch: Callable[[], None] | None) -> None:
    """The k loop: ``UNROLL`` steps per iteration, then ``MID`` steps per iteration, then the
    ``k % MID`` last one by one."""
    c, k = f.c, f.arg["k"]
    # Entered if the count is not 0, tested at the bottom: one branch per iteration.
    c.emit("local.get", k).emit("i32.const", UNROLL.bit_length() - 1).emit("i32.shr_u")
    c.emit("local.tee", steps).emit("if").emit("loop")
    step.rebase()
    for u in range(UNROLL):
        step.emit(u, unrolled=True)
    if touch:
        touch()
    step.advance(UNROLL)
    c.emit("local.get", steps).emit("i32.const", 1).emit("i32.sub").emit("local.tee", steps)
    c.emit("br_if", 0).emit("end").emit("end")
    # then (k % UNROLL) // MID iterations of MID steps
    c.emit("local.get", k).emit("i32.const", MID.bit_length() - 1)
    c.emit("i32.shr_u").emit("i32.const", UNROLL // MID - 1).emit("i32.and")
    c.emit("local.tee", steps).emit("if").emit("loop")
    step.rebase()
    for u in range(MID):
        step.emit(u, unrolled=True)
    step.advance(MID)
    c.emit("local.get", steps).emit("i32.const", 1).emit("i32.sub").emit("local.tee", steps)
    c.emit("br_if", 0).emit("end").emit("end")
    c.emit("local.get", k).emit("i32.const", MID - 1).emit("i32.and")
    c.emit("local.tee", steps).emit("if").emit("loop")
    step.emit(0, unrolled=False)
    step.advance(1)
    c.emit("local.get", steps).emit("i32.const", 1).emit("i32.sub").emit("local.tee", steps)
    c.emit("br_if", 0).emit("end").emit("end")


def _tap_loops(f: DenseFrame, step: _Step, steps: int, taps: Taps) -> None:
    """The k loop over a conv's input read in place: ``TAP_CHANNELS`` channels per
    iteration, then one at a time; a channel's 9 taps are straight-line."""
    c = f.c
    taps_per_channel = TAP_KERNEL * TAP_KERNEL
    for channels, op in ((TAP_CHANNELS, "i32.div_u"), (1, "i32.rem_u")):
        c.emit("local.get", taps.channels).emit("i32.const", TAP_CHANNELS).emit(op)
        c.emit("local.tee", steps).emit("if").emit("loop")
        step.rebase()
        for u in range(channels * taps_per_channel):
            step.emit(u, unrolled=False)
        step.advance(channels * taps_per_channel)
        c.emit("local.get", steps).emit("i32.const", 1).emit("i32.sub").emit("local.tee", steps)
        c.emit("br_if", 0).emit("end").emit("end")


class _Step:
    """Emits one step of k of a tile: B's registers, then per row a broadcast of A and its
    multiply-adds."""

    def __init__(self, f: DenseFrame, isa: Isa, acc: list[list[int]], pa: list[int],
                 pbs: list[int], packed: bool, taps: Taps | None = None, top: int = 0):
        c = f.c
        self.f, self.isa, self.acc, self.pa, self.pbs = f, isa, acc, pa, pbs
        self.pb, self.packed, self.taps, self.top = pbs[0], packed, taps, top
        # with taps: a pointer per kernel row, pb's row first, each one plane on per channel
        self.kernel_rows: list[int] = []
        self.odd_rows: list[int] = []
        if taps:
            self.kernel_rows = [self.pb] + [c.local("i32") for _ in range(TAP_KERNEL - 1)]
            for previous, pointer in zip(self.kernel_rows, self.kernel_rows[1:]):
                c.emit("local.get", previous).emit("local.get", taps.row).emit("i32.add")
                c.emit("local.set", pointer)
        if taps and taps.odd is not None:
            # NOTE: a pointer per kernel row to its odd columns: an add per tap instead ran
            # stride-1 taps 10-20% slower (bench/README.md)
            self.odd_rows = [c.local("i32") for _ in range(TAP_KERNEL)]
            for even, odd in zip(self.kernel_rows, self.odd_rows):
                c.emit("local.get", even).emit("local.get", taps.odd).emit("i32.add")
                c.emit("local.set", odd)
        self.b = [c.local(isa.valtype) for _ in acc[0]]
        # NOTE: mul + add (no FMA) with packed A and B runs column-major: every row's broadcast
        # first, then per register of B one load and its rows' updates (below).
        self.by_column = (packed and len(acc) <= GROUP and f.ldb is None and isa.vector
                          and not isa.fma and taps is None)
        self.a = c.local(isa.valtype)
        self.broadcasts = [c.local("v128") for _ in acc] if self.by_column else []
        self.quads = ([c.local("v128") for _ in (pa[:1] if packed else pa[:QUAD_ROWS])]
                      if isa.vector else [])
        # bytes of a step of one panel of B
        self.width_bytes = 4 * isa.lanes * len(acc[0]) // len(pbs)

    def emit(self, u: int, unrolled: bool) -> None:
        """Step ``u`` of an iteration (A and a packed B at offsets from their pointers);
        ``unrolled`` reads the rows of A in place four steps at a time (``u`` from a multiple
        of 4 on)."""
        c, isa = self.f.c, self.isa
        if self.packed and isa.vector:
            # one register holds this step's A of every row; each row broadcasts its lane
            c.emit("local.get", self.pa[0]).emit("v128.load", 2, 4 * GROUP * u)
            c.emit("local.set", self.quads[0])
        if self.by_column:
            self._by_column(u)
            return
        quad = unrolled and isa.vector and not self.packed
        if quad and u % 4 == 0:
            for pointer, register in zip(self.pa[:QUAD_ROWS], self.quads):
                c.emit("local.get", pointer).emit("v128.load", 2, 4 * u)
                c.emit("local.set", register)
        self._load_b(u)
        for r, row in enumerate(self.acc):
            if self.packed and r >= GROUP:
                # a row past the packed group, read in place: one broadcast load per step
                c.emit("local.get", self.pa[r - GROUP + 1])
                isa.load_splat(c, 4 * u)
            elif self.packed and isa.vector:
                c.emit("local.get", self.quads[0]).emit("local.get", self.quads[0])
                c.emit("i8x16.shuffle", LANE_BROADCAST[self.top + r])
            elif self.packed:
                c.emit("local.get", self.pa[0])
                isa.load_splat(c, 4 * (GROUP * u + r))
            elif quad and r < QUAD_ROWS:
                c.emit("local.get", self.quads[r]).emit("local.get", self.quads[r])
                c.emit("i8x16.shuffle", LANE_BROADCAST[u % 4])
            else:
                c.emit("local.get", self.pa[r])
                isa.load_splat(c, 4 * u)
            c.emit("local.set", self.a)
            # NOTE: vfmadd213ps overwrites its first factor, which cranelift copies first
            # unless that is its last use; B's registers' last use is the last row, whose
            # factors so swap (the same products): 1025 instructions per 32 steps of the
            # 5x8 tile instead of 1065, ~2% faster (bench/README.md).
            last = r == len(self.acc) - 1
            for register, accumulator in zip(self.b, row):
                first, second = (register, self.a) if last else (self.a, register)
                c.emit("local.get", first).emit("local.get", second)
                isa.madd_into(c, accumulator)

    def _load_b(self, u: int) -> None:
        """Load step ``u``'s registers of B: a packed panel's at offsets, a row-major B's at
        ``pb`` (then one row on), or a conv's input at its tap (``Taps``; every kernel row's
        pointer one plane on after a channel's last tap)."""
        c, isa, f = self.f.c, self.isa, self.f
        pointer, offset = self.pb, u * self.width_bytes if f.ldb is None else 0
        if self.taps:
            tap = u % (TAP_KERNEL * TAP_KERNEL)
            pointer, offset = self.kernel_rows[tap // TAP_KERNEL], 4 * (tap % TAP_KERNEL)
            if self.odd_rows:
                # phased: tap 0 an even column, 1 the odd one after it, 2 the next even one
                pointer = (self.odd_rows if tap % TAP_KERNEL == 1 else self.kernel_rows)[
                    tap // TAP_KERNEL]
                offset = 4 * (tap % TAP_KERNEL == 2)
        per_panel = len(self.b) // len(self.pbs)
        for v, register in enumerate(self.b):
            if not self.taps:
                pointer = self.pbs[v // per_panel] if f.ldb is None else self.pb
            c.emit("local.get", pointer)
            isa.load(c, offset + 4 * isa.lanes * (v % per_panel))
            c.emit("local.set", register)
        if self.taps and tap == TAP_KERNEL * TAP_KERNEL - 1:
            for row in self.kernel_rows + self.odd_rows:
                c.emit("local.get", row).emit("local.get", self.taps.plane).emit("i32.add")
                c.emit("local.set", row)
        elif f.ldb is not None and not self.taps:
            c.emit("local.get", self.pb).emit("local.get", f.ldb).emit("i32.add")
            c.emit("local.set", self.pb)

    def _by_column(self, u: int) -> None:
        """Step ``u`` with packed A and a packed B, column-major: the rows' broadcasts, then
        per register of B its load and one multiply-add per row. With mul + add (two ops on
        the FP pipes per update, beside the shuffles) this order measured 5-10% faster than
        row-major; with FMA row-major is as fast and needs fewer registers."""
        c, isa = self.f.c, self.isa
        for r, broadcast in enumerate(self.broadcasts, self.top):
            c.emit("local.get", self.quads[0]).emit("local.get", self.quads[0])
            c.emit("i8x16.shuffle", LANE_BROADCAST[r]).emit("local.set", broadcast)
        per_panel = len(self.b) // len(self.pbs)
        for v, register in enumerate(self.b):
            c.emit("local.get", self.pbs[v // per_panel])
            isa.load(c, u * self.width_bytes + 4 * isa.lanes * (v % per_panel))
            c.emit("local.set", register)
            for broadcast, row in zip(self.broadcasts, self.acc):
                c.emit("local.get", broadcast).emit("local.get", register)
                isa.madd_into(c, row[v])

    def rebase(self) -> None:
        """Set each pointer the iteration's loads use to itself plus 0, first thing in the
        loop body. NOTE: a loop-carried i32 local used as an address costs cranelift (opt
        level ``"none"``) a zero-extending ``mov`` at every load, which a value computed by
        an ``i32.add`` in the same body does not need (its upper half is known zero): the
        5x8 tile's 32 steps went from 987 to 861 instructions, MiniLM b1 1.03x faster
        (bench/README.md)."""
        c = self.f.c
        # B's: a conv's kernel rows and, phased, their odd columns; else pb
        for pointer in [*self.pa, *(self.kernel_rows + self.odd_rows or self.pbs)]:
            c.emit("local.get", pointer).emit("i32.const", 0).emit("i32.add")
            c.emit("local.set", pointer)

    def advance(self, steps: int) -> None:
        """Move A's pointers, and a packed B's, past ``steps`` steps of k."""
        c = self.f.c
        pointers = [(p, 4 * steps) for p in self.pa]
        if self.packed:
            pointers[0] = (self.pa[0], 4 * GROUP * steps)
        if self.f.ldb is None and not self.taps:
            pointers += [(pb, steps * self.width_bytes) for pb in self.pbs]
        for pointer, amount in pointers:
            c.emit("local.get", pointer).emit("i32.const", amount).emit("i32.add")
            c.emit("local.set", pointer)
