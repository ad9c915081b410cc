"""The SIMD tile of the qlinear family: ``rows`` rows of A by one ``QPANEL``-column panel of
the packed W, accumulated in i32x4 registers four steps of k at a time.

Each step multiplies four bytes of A's row, in every lane, by a panel step (32 bytes:
columns 0-3 then 4-7, each column's four weights adjacent). The products are exact on every
engine:

- ``simd128``: W widened to i16 as it is loaded (``v128.load8x8_s``: two columns by four
  steps of k), A widened to i16 once per row panel by ``pack_rows`` into the scratch ``wa``
  (each step's four values twice, the v128 the step multiplies by, so the k loop loads it
  with one plain ``v128.load``: cranelift lowers a splat load to a scalar load, a move and
  a broadcast, two shuffle-port instructions per row and step), then ``i32x4.dot_i16x8_s``:
  each lane sums two products of one column, so a column's four steps land in two lanes,
  added pairwise at the end; a ``direct`` tile (a product of a few rows, where widening
  each panel into scratch would cost as much as the product) widens W as it loads it
  (``v128.load8x8_s``) from the packed panels, the same products in the same order; the
  ``qlinear_wide`` rows' tiles load W's panels packed wide (int16, the layout of a panel
  widened into ``ws``) with plain ``v128.load`` s: no ``pmovsxbw`` on the shuffle port per
  8 products, and no panel widened into scratch (their one-row tile takes ``WIDE_UNROLL``
  steps per iteration);
- ``relaxed``: ``i32x4.relaxed_dot_i8x16_i7x16_add_s`` sums four products of one column per
  lane, but its second operand is only defined on 7-bit values: A (uint8, or int8 moved to
  uint8 by flipping its sign bit, its zero point raised by 128 to match) is split as ``lo +
  128 * hi`` with ``lo = a & 127`` and ``hi = a >> 7``, both 7-bit, and W (int8) is the
  first operand; two accumulators per register, ``acc_lo + (acc_hi << 7)`` at the end.
  Every intermediate pair sum stays within i16 (at most 2 * 128 * 127), so no engine
  saturates. It reads A in place.
- ``seven`` (the relaxed module, on weights the packer marked 7-bit): the same relaxed dot
  with the operands the other way round, one dot per 16 products: A as int8 (uint8 minus 128,
  its zero point lowered by 128 to match) is the first operand, read from ``wa`` as
  ``pack_rows(seven=True)`` stored it, and W plus 64 (7-bit) the second, from ``ws`` (a
  column in [-63, 64] negated first, its result negated back); each row then subtracts 64
  times its sum of A. Pair sums stay within 2 * 128 * 127 here too.
- ``qlinear_mixed`` rows (``pack_quantized``'s mixed packing): per panel, as its flag says,
  the wide tile, or on a 7-bit panel's ``s * w + 64`` bytes, read in place from W, the
  ``seven`` tile in the relaxed module (A as int8 stored by ``pack_rows(mixed=True)`` in
  ``ws``; uint8 A's ``- 128`` given back as 128 times the column sums) and elsewhere a
  ``decode`` tile: the i16 dot on the bytes widened as loaded (``v128.load8x8_u``), A widened
  in ``wa``, then ``s * (acc - 64 * sum(A))`` per column.

Accumulation: every product is at most 255 * 128 in magnitude, so k up to
``abi_quantized.QLINEAR_MAX_K`` stays within int32 (wrapping arithmetic keeps the A zero point's
correction exact as long as the true result fits).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import partial

from ..pack_quantized import QPANEL, SEVEN_SHIFT
from ..wasm import Code
from .conv_tiles import LANE_BROADCAST
from .isa import Isa
from .loops import strided_loop
from .qlinear_frame import QFrame, column_start, finish_scalar
from .qlinear_pack import (
    MIXED_ROWS,
    PACKED_SHIFT,
    PACKED_STEP_BYTES,
    SEVEN_STEP_BYTES,
    WIDE_STEP_BYTES,
)

EVEN = bytes(b for lane in (0, 2, 4, 6) for b in range(4 * lane, 4 * lane + 4))
ODD = bytes(b for lane in (1, 3, 5, 7) for b in range(4 * lane, 4 * lane + 4))
STEP_BYTES = 4 * QPANEL
"""Bytes of one packed panel step: QPANEL columns by four steps of k."""
UNROLL = 2
"""The relaxed tile's steps of four k per loop iteration: the 8 bytes of A one
v128.load64_zero brings. At 4 (a v128 of A) cranelift's opt level ``speed`` issued all 16
widened W loads of the iteration first and spilled them: 2 ran MiniLM's linear shapes
1.10-1.24x faster (measured on the simd128 tile when it still read A in place,
bench/README.md)."""
A_LOAD = {2: "v128.load64_zero", 4: "v128.load"}
WIDE_UNROLL = 2
"""Steps of four k per loop iteration of the one-row tile over wide weights (a loop bound by
the instructions it issues, not by its vector ports): 2 ran 1x256x1024 1.08-1.10x as fast
as 1; at 4, and at 2 for the two-row tile, cranelift issued all the iteration's loads first
and spilled (0.83-0.89x)."""
"""The load of one row's ``4 * UNROLL`` bytes of A."""


def _splat_i8(c: Code, value: int) -> None:
    c.emit("v128.const", bytes([value & 255]) * 16)


class Tile:
    """Emits one tile: its accumulators, a step of k for each row, and the stores."""

    def __init__(self, f: QFrame, isa: Isa, rows: int, i: int, j: int, seven: bool = False,
                 direct: bool = False, decode: bool = False, from_ws: bool = False):
        c = f.c
        self.f, self.isa, self.rows, self.i, self.j = f, isa, rows, i, j
        self.seven, self.direct, self.decode, self.from_ws = seven, direct, decode, from_ws
        self.unroll = WIDE_UNROLL if f.wide and rows == 1 else 1
        self.relaxed = isa.fma and not seven
        self.packed = not self.relaxed  # simd128 and seven read A and W from qlinear_pack
        groups = 2 if self.relaxed or seven else 4  # v128 of W per step
        parts = 2 if self.relaxed else 1  # lo and hi accumulators
        self.acc = [[[c.local("v128") for _ in range(parts)] for _ in range(groups)]
                    for _ in range(rows)]
        self.w = [c.local("v128") for _ in range(groups)]
        self.a, self.hi = c.local("v128"), c.local("v128")
        self.spare = c.local("v128")
        self.pa = [c.local("i32") for _ in range(rows)]
        self.quads = [c.local("v128") for _ in range(rows)]
        self.pw, self.steps, self.word, self.remaining = (c.local("i32") for _ in range(4))

    def emit(self, edge: bool) -> None:
        """The whole tile at (i, j); an ``edge`` tile stores only its columns before n."""
        c, f = self.f.c, self.f
        for r, pointer in enumerate(self.pa):
            # pa = a + (i + r) * k, or wa + (i + r) * row_bytes (packed)
            # (a mixed packing's 7-bit tile: its A stored by pack_rows(mixed=True) in ws)
            base = "ws" if self.seven and f.mixed else "wa" if self.packed else "a"
            c.emit("local.get", f.arg[base]).emit("local.get", self.i)
            if r:
                c.emit("i32.const", r).emit("i32.add")
            if self.packed:
                c.emit("local.get", f.panel_bytes).emit("i32.const", PACKED_SHIFT)
                c.emit("i32.shr_u")
            else:
                c.emit("local.get", f.arg["k"])
            c.emit("i32.mul").emit("i32.add").emit("local.set", pointer)
        if self.packed and not self.direct and not f.wide or self.from_ws:
            c.emit("local.get", f.arg["ws"])
        else:
            # w + (j / QPANEL) * panel_bytes, twice that for wide panels
            c.emit("local.get", f.arg["w"]).emit("local.get", self.j)
            c.emit("i32.const", QPANEL.bit_length() - 1 - int(f.wide)).emit("i32.shr_u")
            c.emit("local.get", f.panel_bytes).emit("i32.mul").emit("i32.add")
        c.emit("local.set", self.pw)
        for row in self.acc:
            for group in row:
                for register in group:
                    c.emit("v128.const", bytes(16)).emit("local.set", register)
        if self.packed:
            # every step of four k, the last one zero-padded in wa (W is zero there):
            # ``unroll`` steps per iteration, then single steps
            for shift, mask, unroll in ((self.unroll.bit_length() + 1, None, self.unroll),
                                        (2, self.unroll - 1, 1)):
                if mask == 0:
                    continue
                c.emit("local.get", f.arg["k"]).emit("i32.const", 3).emit("i32.add")
                c.emit("i32.const", shift).emit("i32.shr_u")
                if mask is not None:
                    c.emit("i32.const", mask).emit("i32.and")
                self._loop(lambda: None, unroll)
        else:
            # UNROLL steps per iteration, then single steps, then the k % 4 tail.
            self._loop(lambda: self._count(UNROLL.bit_length() + 1, None), UNROLL)
            self._loop(lambda: self._count(2, UNROLL - 1), 1)
            c.emit("local.get", f.arg["k"]).emit("i32.const", 3).emit("i32.and").emit("if")
            self._step(self._tail_word, 0)
            c.emit("end")
        columns = [] if edge else column_vectors(f, self.j)
        for r in range(self.rows):
            self._store_row(r, columns)

    def _loop(self, count: Callable[[], object], unroll: int) -> None:
        """A loop of ``unroll`` steps per iteration, as many iterations as ``count`` pushes."""
        c = self.f.c
        count()
        c.emit("local.tee", self.steps).emit("if").emit("loop")
        if unroll > 1 and not self.packed:
            # NOTE: one load of UNROLL steps' bytes per row, each step's 4 broadcast by a
            # shuffle (pshufd), instead of a splat load per step.
            for pointer, quad in zip(self.pa, self.quads):
                c.emit("local.get", pointer).emit(A_LOAD[UNROLL], 0, 0)
                c.emit("local.set", quad)
        w_step = (SEVEN_STEP_BYTES if self.seven else STEP_BYTES if self.decode else
                  WIDE_STEP_BYTES if self.packed and not self.direct else STEP_BYTES)
        for u in range(unroll):
            self._step(partial(self._packed_load, PACKED_STEP_BYTES * u) if self.packed else
                       self._quad_lane(u) if unroll > 1 else self._splat_load, w_step * u)
        a_bytes = (PACKED_STEP_BYTES if self.packed else 4) * unroll
        for pointer, amount in [(p, a_bytes) for p in self.pa] + [(self.pw, w_step * unroll)]:
            c.emit("local.get", pointer).emit("i32.const", amount).emit("i32.add")
            c.emit("local.set", pointer)
        c.emit("local.get", self.steps).emit("i32.const", 1).emit("i32.sub")
        c.emit("local.tee", self.steps).emit("br_if", 0).emit("end").emit("end")

    def _packed_load(self, offset: int, r: int) -> None:
        """Push row r's step of A ``offset`` bytes on, widened and doubled by ``pack_rows``."""
        self.f.c.emit("local.get", self.pa[r]).emit("v128.load", 0, offset)

    def _splat_load(self, r: int) -> None:
        """Push row r's next four bytes of A in every lane."""
        self.f.c.emit("local.get", self.pa[r]).emit("v128.load32_splat", 0, 0)

    def _quad_lane(self, u: int) -> Callable[[int], None]:
        """Push row r's four bytes of step ``u`` of the unrolled group, in every lane."""
        c = self.f.c

        def push(r: int) -> None:
            c.emit("local.get", self.quads[r]).emit("local.get", self.quads[r])
            c.emit("i8x16.shuffle", LANE_BROADCAST[u])

        return push

    def _tail_word(self, r: int) -> None:
        """Splat A's last ``k % 4`` bytes of row ``r`` (zeros after them: W is zero there)."""
        c = self.f.c
        count = self.steps
        c.emit("i32.const", 0).emit("local.set", self.word)
        c.emit("i32.const", 0).emit("local.set", count)

        def byte() -> None:
            c.emit("local.get", self.word).emit("local.get", self.pa[r]).emit("local.get", count)
            c.emit("i32.add").emit("i32.load8_u", 0, 0).emit("local.get", count)
            c.emit("i32.const", 3).emit("i32.shl").emit("i32.shl").emit("i32.or")
            c.emit("local.set", self.word)

        c.emit("local.get", self.f.arg["k"]).emit("i32.const", 3).emit("i32.and")
        c.emit("local.set", self.remaining)
        strided_loop(c, count, 1, self.remaining, byte)
        c.emit("local.get", self.word).emit("i32x4.splat")

    def _count(self, shift: int, mask: int | None) -> None:
        """Push ``(k >> shift) & mask`` (no mask: all of it)."""
        c = self.f.c
        c.emit("local.get", self.f.arg["k"]).emit("i32.const", shift).emit("i32.shr_u")
        if mask is not None:
            c.emit("i32.const", mask).emit("i32.and")

    def _step(self, splat_a: Callable[[int], None], w_offset: int) -> None:
        """One step of four k: W's registers (``w_offset`` bytes past ``pw``), then each
        row's products."""
        c, f = self.f.c, self.f
        for g, register in enumerate(self.w):
            c.emit("local.get", self.pw)
            if self.direct:
                c.emit("v128.load8x8_s", 0, w_offset + 8 * g)
            elif self.decode:
                # a mixed packing's 7-bit panel: s * w + SEVEN_SHIFT (corrected at the end)
                c.emit("v128.load8x8_u", 0, w_offset + 8 * g)
            else:
                c.emit("v128.load", 0, w_offset + 16 * g)
            c.emit("local.set", register)
        signed = f.spec.dtypes[0] == "int8"
        for r in range(self.rows):
            splat_a(r)
            if self.relaxed:
                if signed:
                    _splat_i8(c, 0x80)
                    c.emit("v128.xor")
                c.emit("local.tee", self.a).emit("i32.const", 7).emit("i8x16.shr_u")
                c.emit("local.set", self.hi)
                c.emit("local.get", self.a)
                _splat_i8(c, 0x7F)
                c.emit("v128.and").emit("local.set", self.a)
                for g, register in enumerate(self.w):
                    for part, source in enumerate((self.a, self.hi)):
                        acc = self.acc[r][g][part]
                        c.emit("local.get", register).emit("local.get", source)
                        c.emit("local.get", acc)
                        c.emit("i32x4.relaxed_dot_i8x16_i7x16_add_s").emit("local.set", acc)
            else:
                c.emit("local.set", self.a)
                for g, register in enumerate(self.w):
                    acc = self.acc[r][g][0]
                    c.emit("local.get", self.a).emit("local.get", register)
                    if self.seven:
                        c.emit("local.get", acc).emit("i32x4.relaxed_dot_i8x16_i7x16_add_s")
                    else:
                        c.emit("i32x4.dot_i16x8_s").emit("local.get", acc).emit("i32x4.add")
                    c.emit("local.set", acc)

    def _columns(self, r: int, half: int) -> None:
        """Push the i32x4 sums of columns ``4 * half .. 4 * half + 4`` of row ``r``."""
        c, f = self.f.c, self.f
        if self.seven or self.decode:
            # s * (acc - SEVEN_SHIFT * (row's sum of A)) = (x ^ m) - m, the columns' masks m
            # at masks + j * 4 (32 bytes a panel), the row's sum at ws + panel_bytes + 4 * row
            # (mixed: at ws + MIXED_ROWS * row_bytes + 4 * row, of A as int8); decode: A as
            # it is, uint8 A's sum 128 * k more
            mask = self.spare
            c.emit("local.get", f.masks).emit("local.get", self.j).emit("i32.const", 2)
            c.emit("i32.shl").emit("i32.add").emit("v128.load", 0, 16 * half)
            c.emit("local.set", mask)
            if self.decode:
                self._pair_sums(r, half)
            else:
                c.emit("local.get", self.acc[r][half][0])
            c.emit("local.get", f.arg["ws"]).emit("local.get", f.panel_bytes)
            if f.mixed:
                c.emit("i32.const", PACKED_SHIFT).emit("i32.shr_u")
                c.emit("i32.const", MIXED_ROWS).emit("i32.mul")
            c.emit("i32.add").emit("local.get", self.i).emit("i32.const", 2)
            c.emit("i32.shl").emit("i32.add").emit("i32.load", 2, 4 * r)
            unsigned = f.spec.dtypes[0] == "uint8"
            if self.decode and unsigned:
                c.emit("local.get", f.arg["k"]).emit("i32.const", 7).emit("i32.shl")
                c.emit("i32.add")
            c.emit("i32.const", SEVEN_SHIFT).emit("i32.mul").emit("i32x4.splat")
            c.emit("i32x4.sub")
            c.emit("local.get", mask).emit("v128.xor").emit("local.get", mask).emit("i32x4.sub")
            if f.mixed and self.seven and unsigned:
                # A went in as uint8 A - 128: add 128 * the columns' weight sums back
                _column_vector(f, f.sums, self.j, half)
                c.emit("i32.const", 7).emit("i32x4.shl").emit("i32x4.add")
            return
        if self.relaxed:
            lo, hi = self.acc[r][half]
            c.emit("local.get", hi).emit("i32.const", 7).emit("i32x4.shl")
            c.emit("local.get", lo).emit("i32x4.add")
            return
        self._pair_sums(r, half)

    def _pair_sums(self, r: int, half: int) -> None:
        """Push the i16 dot tile's sums of columns ``4 * half .. 4 * half + 4`` of row ``r``:
        each column's two lanes added."""
        c = self.f.c
        first, second = self.acc[r][2 * half][0], self.acc[r][2 * half + 1][0]
        for pattern in (EVEN, ODD):
            c.emit("local.get", first).emit("local.get", second).emit("i8x16.shuffle", pattern)
        c.emit("i32x4.add")

    def _store_row(self, r: int, columns: list[int]) -> None:
        """Store row ``r`` of the tile: an edge tile (no ``columns``) column by column."""
        c, f = self.f.c, self.f
        sums = [c.local("v128") for _ in range(2)]
        for half, local in enumerate(sums):
            self._columns(r, half)
            c.emit("local.set", local)
        row = c.local("i32")
        c.emit("local.get", self.i)
        if r:
            c.emit("i32.const", r).emit("i32.add")
        c.emit("local.set", row)
        if columns:
            store_vectors(f, row, self.j, sums, columns)
        else:
            self._store_edge(row, sums)

    def _store_edge(self, row: int, sums: list[int]) -> None:
        c, f = self.f.c, self.f
        column, acc = c.local("i32"), c.local("i32")
        for t in range(QPANEL):
            c.emit("local.get", self.j).emit("i32.const", t).emit("i32.add")
            c.emit("local.tee", column).emit("local.get", f.arg["n"]).emit("i32.lt_u").emit("if")
            c.emit("local.get", sums[t // 4]).emit("i32x4.extract_lane", t % 4)
            column_start(f, column)
            c.emit("i32.add").emit("local.set", acc)
            finish_scalar(f, acc, row, column)
            c.emit("end")


def _column_vector(f: QFrame, base: int, j: int, half: int) -> None:
    """Push the v128 at ``base + (j + 4 * half) * 4`` (four i32 or f32 of columns)."""
    c = f.c
    c.emit("local.get", base).emit("local.get", j).emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add").emit("v128.load", 0, 16 * half)


def column_vectors(f: QFrame, j: int) -> list[int]:
    """Locals holding what every row of a full tile at column ``j`` finishes with, per half
    (four columns): ``bias - a_zero * column sums`` (i32x4), ``a_scale * w_scale`` (f32x4,
    requantized: divided by ``c_scale``) and, dequantized, ``fbias``. Computed once per
    tile, not once per row."""
    c, arg = f.c, f.arg
    out = []
    for half in range(2):
        start, scale = c.local("v128"), c.local("v128")
        _column_vector(f, arg["bias"], j, half)
        c.emit("local.get", f.a_zero).emit("i32x4.splat")
        _column_vector(f, f.sums, j, half)
        c.emit("i32x4.mul").emit("i32x4.sub").emit("local.set", start)
        c.emit("local.get", f.a_scale).emit("f32x4.splat")
        _column_vector(f, arg["w_scale"], j, half)
        c.emit("f32x4.mul")
        if f.requantize:
            c.emit("local.get", f.c_scale).emit("f32x4.splat").emit("f32x4.div")
        c.emit("local.set", scale)
        out += [start, scale]
        if not f.requantize:
            fbias = c.local("v128")
            _column_vector(f, arg["fbias"], j, half)
            c.emit("local.set", fbias)
            out.append(fbias)
    return out


def store_vectors(f: QFrame, row: int, j: int, sums: list[int], columns: list[int]) -> None:
    """Finish and store the ``QPANEL`` columns of a full tile row from its two i32x4 sums and
    the tile's ``column_vectors``."""
    c, arg = f.c, f.arg
    values = []
    per_half = len(columns) // 2
    for half, local in enumerate(sums):
        start, scale, *fbias = columns[per_half * half:per_half * (half + 1)]
        c.emit("local.get", local).emit("local.get", start).emit("i32x4.add")
        c.emit("f32x4.convert_i32x4_s").emit("local.get", scale).emit("f32x4.mul")
        if f.requantize:
            c.emit("f32x4.nearest")
            c.emit("local.get", f.c_zero).emit("f32x4.splat").emit("f32x4.add")
            c.emit("local.get", f.low).emit("f32x4.splat").emit("f32x4.max")
            c.emit("local.get", f.high).emit("f32x4.splat").emit("f32x4.min")
            c.emit("i32x4.trunc_sat_f32x4_s")
            value = c.local("v128")
            c.emit("local.set", value)
            values.append(value)
            continue
        c.emit("local.get", fbias[0]).emit("f32x4.add")
        if f.activation:
            c.emit("v128.const", bytes(16)).emit("f32x4.max")
        if f.activation == "relu6":
            c.emit("v128.const", struct.pack("<f", 6.0) * 4)
            c.emit("f32x4.min")
        value = c.local("v128")
        c.emit("local.set", value)
        # C + (row * n + j + 4 * half) * 4
        c.emit("local.get", arg["c"]).emit("local.get", row).emit("local.get", arg["n"])
        c.emit("i32.mul").emit("local.get", j).emit("i32.add").emit("i32.const", 2)
        c.emit("i32.shl").emit("i32.add").emit("local.get", value)
        c.emit("v128.store", 0, 16 * half)
    if f.requantize:
        c.emit("local.get", arg["c"]).emit("local.get", row).emit("local.get", arg["n"])
        c.emit("i32.mul").emit("local.get", j).emit("i32.add").emit("i32.add")
        c.emit("local.get", values[0]).emit("local.get", values[1])
        c.emit("i16x8.narrow_i32x4_s").emit("local.tee", values[0]).emit("local.get", values[0])
        c.emit("i8x16.narrow_i16x8_s" if f.spec.dtypes[1] == "int8" else "i8x16.narrow_i16x8_u")
        c.emit("i64x2.extract_lane", 0).emit("i64.store", 0, 0)
