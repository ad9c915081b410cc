"""The simd128 qlinear tile's operands widened to i16 in scratch, so that its k loop issues
only plain ``v128.load`` s beside its dot products: cranelift lowers a splat load to a
scalar load, a move and a broadcast, and ``v128.load8x8_s`` to a ``pmovsxbw``, all on the
shuffle port that the adds also need.

- ``pack_rows``: a block of A's rows (``pack_quantized.qblock_rows``), into ``wa``: row r's
  step s of four k at ``wa + r * round_up(k, 4) * 4 + 16 * s``, its four values as i16 twice
  (the v128 a step multiplies by), zeros past k;
- ``widen_panel``: one ``QPANEL``-column panel of the packed W, into ``ws``: each 8 bytes (two
  columns by four steps of k) as eight i16, in order, so step s's four registers are the 64
  bytes at ``ws + 64 * s``.

With ``seven`` (7-bit weights, the relaxed module's ``i32x4.relaxed_dot_i8x16_i7x16_add_s``
tile): ``pack_rows`` stores each step's four values of A as int8 (uint8 minus 128), four
times (16 bytes, the same row stride), and each row's sum of them as an i32 at
``ws + panel_bytes + 4 * r``; ``widen_panel`` copies the panel's bytes, each column's negated
where the packer marked it, plus 64 (7-bit), so step s's two registers are the 32 bytes at
``ws + 32 * s``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..pack_quantized import DIRECT_ROWS, QPANEL, SEVEN_SHIFT
from ..wasm import Code
from .loops import strided_loop
from .qlinear_frame import QFrame

PACKED_STEP_BYTES = 16
"""Bytes of one step of A packed by ``pack_rows``: four i16, twice."""
PACKED_SHIFT = 1
"""A packed row's bytes are ``round_up(k, 4) * 4``: the frame's ``panel_bytes`` (``round_up(k,
4) * QPANEL``) shifted right by this."""
WIDE_STEP_BYTES = 8 * QPANEL
"""Bytes of one step of a W panel widened by ``widen_panel``: QPANEL columns by four i16."""
SEVEN_STEP_BYTES = 4 * QPANEL
"""Bytes of one step of a W panel as ``widen_panel`` stores it with ``seven``."""
MIXED_ROWS = DIRECT_ROWS - 1
"""The most rows of A a ``qlinear_mixed`` kernel packs at a time (its rows' products): with
``pack_rows(mixed=True)`` their int8 steps go in ``ws`` (a row's ``panel_bytes >>
PACKED_SHIFT`` bytes apart), then their sums, at ``ws + MIXED_ROWS * row_bytes``: within
the ``4 * round_up(k, 4)`` floats of ``ws`` per ``QSPLIT_ROWS`` rows."""


STEP_TWICE = [bytes(list(range(8 * s, 8 * s + 8)) * 2) for s in range(2)]
"""Shuffles of a v128 of eight i16 (two steps of A) to step s's four values twice."""


def _splat_byte(c: Code, value: int) -> None:
    c.emit("v128.const", bytes([value & 255]) * 16)


def pack_rows(f: QFrame, count: int, seven: bool = False, mixed: bool = False) -> None:
    """Widen the first ``count`` (a local) rows of A to i16 into ``wa`` (the module
    docstring's layout), or with ``seven`` store them as int8 steps and their row sums
    (``mixed``: in ``ws``, ``MIXED_ROWS``)."""
    c, arg = f.c, f.arg
    signed = f.spec.dtypes[0] == "int8"
    src, dst, end, chunks, word, byte, row, sums = (c.local("i32") for _ in range(8))
    total, vector, wide = c.local("v128"), c.local("v128"), c.local("v128")

    def store(push_word: Callable[[], object]) -> None:
        push_word()
        if seven and not signed:
            c.emit("i32.const", 0x80808080 - (1 << 32)).emit("i32.xor")  # uint8 - 128
        c.emit("i32x4.splat")
        if not seven:
            c.emit("i16x8.extend_low_i8x16_s" if signed else "i16x8.extend_low_i8x16_u")
        c.emit("local.set", vector)
        c.emit("local.get", dst).emit("local.get", vector).emit("v128.store", 0, 0)
        if seven:
            # total += (a0 + a1, a2 + a3, ...): the step's values widened to i16, dotted with
            # ones (plain SIMD: V8 computed a relaxed dot by a constant splat otherwise)
            c.emit("local.get", vector).emit("i16x8.extend_low_i8x16_s")
            c.emit("v128.const", b"\x01\x00" * 8).emit("i32x4.dot_i16x8_s")
            c.emit("local.get", total).emit("i32x4.add").emit("local.set", total)
        c.emit("local.get", dst).emit("i32.const", PACKED_STEP_BYTES).emit("i32.add")
        c.emit("local.set", dst)

    def four_steps() -> None:
        # two widenings and four one-register shuffles where four steps' splats take
        # three shuffle-port instructions each (movd, pshufd, pmovzxbw)
        c.emit("local.get", src).emit("v128.load", 0, 0).emit("local.set", vector)
        for half, name in enumerate(("low", "high")):
            c.emit("local.get", vector)
            c.emit(f"i16x8.extend_{name}_i8x16_{'s' if signed else 'u'}").emit("local.set", wide)
            for step in range(2):
                c.emit("local.get", dst).emit("local.get", wide).emit("local.get", wide)
                c.emit("i8x16.shuffle", STEP_TWICE[step])
                c.emit("v128.store", 0, PACKED_STEP_BYTES * (2 * half + step))
        c.emit("local.get", dst).emit("i32.const", 4 * PACKED_STEP_BYTES).emit("i32.add")
        c.emit("local.set", dst)

    def tail_byte() -> None:
        # word |= A[src + byte] << 8 * byte
        c.emit("local.get", word).emit("local.get", src).emit("local.get", byte)
        c.emit("i32.add").emit("i32.load8_u", 0, 0).emit("local.get", byte)
        c.emit("i32.const", 3).emit("i32.shl").emit("i32.shl").emit("i32.or")
        c.emit("local.set", word)

    def one_row() -> None:
        if seven:
            c.emit("v128.const", bytes(16)).emit("local.set", total)
        # end = src + (k & ~3): the row's whole steps, then the k % 4 tail
        c.emit("local.get", src).emit("local.get", arg["k"]).emit("i32.const", -4)
        c.emit("i32.and").emit("i32.add").emit("local.set", end)
        if not seven:
            # first four steps at a time while 16 bytes remain
            c.emit("local.get", src).emit("local.get", arg["k"]).emit("i32.const", -16)
            c.emit("i32.and").emit("i32.add").emit("local.set", chunks)
            strided_loop(c, src, 16, chunks, four_steps)
        strided_loop(c, src, 4, end,
                     lambda: store(lambda: c.emit("local.get", src).emit("i32.load", 0, 0)))
        c.emit("local.get", arg["k"]).emit("i32.const", 3).emit("i32.and").emit("if")
        c.emit("i32.const", 0).emit("local.set", word)
        c.emit("i32.const", 0).emit("local.set", byte)
        c.emit("local.get", arg["k"]).emit("i32.const", 3).emit("i32.and").emit("local.set", end)
        strided_loop(c, byte, 1, end, tail_byte)
        if seven and not signed:
            # the padding bytes were 0: make them 128, which the store's xor turns into 0
            c.emit("local.get", word).emit("i32.const", -1).emit("local.get", end)
            c.emit("i32.const", 3).emit("i32.shl").emit("i32.shl")
            c.emit("i32.const", 0x80808080 - (1 << 32)).emit("i32.and").emit("i32.or")
            c.emit("local.set", word)
        store(lambda: c.emit("local.get", word))
        c.emit("local.get", src).emit("local.get", end).emit("i32.add").emit("local.set", src)
        c.emit("end")
        if seven:
            c.emit("local.get", sums).emit("local.get", total).emit("i32x4.extract_lane", 0)
            c.emit("local.get", total).emit("i32x4.extract_lane", 1).emit("i32.add")
            c.emit("i32.store", 2, 0)
            c.emit("local.get", sums).emit("i32.const", 4).emit("i32.add").emit("local.set", sums)

    # rows are contiguous in both: A's k bytes apart, wa's round_up(k, 4) * 4
    c.emit("local.get", arg["a"]).emit("local.set", src)
    c.emit("local.get", arg["ws" if mixed else "wa"]).emit("local.set", dst)
    if seven:
        c.emit("local.get", arg["ws"]).emit("local.get", f.panel_bytes)
        if mixed:
            c.emit("i32.const", PACKED_SHIFT).emit("i32.shr_u")
            c.emit("i32.const", MIXED_ROWS).emit("i32.mul")
        c.emit("i32.add").emit("local.set", sums)
    c.emit("i32.const", 0).emit("local.set", row)
    strided_loop(c, row, 1, count, one_row)


def widen_panel(f: QFrame, j: int, seven: bool = False) -> None:
    """Widen the packed W's panel of columns ``j .. j + QPANEL`` to i16 into ``ws``, or with
    ``seven`` store ``s * w + SEVEN_SHIFT`` (``s`` the column's sign: ``(w ^ m) + 64 - m``
    with its mask ``m``, 0 or -1 in every byte)."""
    c, arg = f.c, f.arg
    src, dst, end = (c.local("i32") for _ in range(3))
    masks = [c.local("v128") for _ in range(2)] if seven else []
    shifts = [c.local("v128") for _ in range(2)] if seven else []
    out_bytes = SEVEN_STEP_BYTES if seven else WIDE_STEP_BYTES

    def step() -> None:
        for half in range(out_bytes // 16):
            c.emit("local.get", dst).emit("local.get", src)
            if seven:
                c.emit("v128.load", 0, 16 * half).emit("local.get", masks[half])
                c.emit("v128.xor").emit("local.get", shifts[half]).emit("i8x16.add")
            else:
                c.emit("v128.load8x8_s", 0, 8 * half)
            c.emit("v128.store", 0, 16 * half)
        c.emit("local.get", dst).emit("i32.const", out_bytes).emit("i32.add")
        c.emit("local.set", dst)

    for half, (mask, shift) in enumerate(zip(masks, shifts)):
        # the panel's masks: masks + (j / QPANEL) * 32; shift = 64 - mask
        c.emit("local.get", f.masks).emit("local.get", j).emit("i32.const", 2).emit("i32.shl")
        c.emit("i32.add").emit("v128.load", 0, 16 * half).emit("local.set", mask)
        _splat_byte(c, SEVEN_SHIFT)
        c.emit("local.get", mask).emit("i8x16.sub").emit("local.set", shift)
    # src = w + (j / QPANEL) * panel_bytes, end = src + panel_bytes; dst = ws
    c.emit("local.get", arg["w"]).emit("local.get", j)
    c.emit("i32.const", QPANEL.bit_length() - 1).emit("i32.shr_u")
    c.emit("local.get", f.panel_bytes).emit("i32.mul").emit("i32.add").emit("local.tee", src)
    c.emit("local.get", f.panel_bytes).emit("i32.add").emit("local.set", end)
    c.emit("local.get", arg["ws"]).emit("local.set", dst)
    strided_loop(c, src, SEVEN_STEP_BYTES if seven else WIDE_STEP_BYTES // 2, end, step)


def widen_seven_panel(f: QFrame, j: int) -> None:
    """Widen a mixed packing's 7-bit panel of columns ``j .. j + QPANEL`` into ``ws`` as
    ``widen_panel`` lays a panel out: each byte ``b`` of a column with mask ``m`` (0 or -1
    in every byte) as the int16 ``((b - SEVEN_SHIFT) ^ m) - m``, its weight."""
    c, arg = f.c, f.arg
    src, dst, end = (c.local("i32") for _ in range(3))
    masks = [c.local("v128") for _ in range(QPANEL // 2)]
    for group, mask in enumerate(masks):
        # columns 2 * group and 2 * group + 1's masks: masks + j * 4 + 8 * group
        c.emit("local.get", f.masks).emit("local.get", j).emit("i32.const", 2).emit("i32.shl")
        c.emit("i32.add").emit("v128.load64_zero", 0, 8 * group).emit("local.set", mask)

    def step() -> None:
        for group, mask in enumerate(masks):
            c.emit("local.get", dst).emit("local.get", src)
            c.emit("v128.load64_zero", 0, 8 * group)
            _splat_byte(c, SEVEN_SHIFT)
            c.emit("i8x16.sub").emit("local.get", mask).emit("v128.xor")
            c.emit("local.get", mask).emit("i8x16.sub").emit("i16x8.extend_low_i8x16_s")
            c.emit("v128.store", 0, 16 * group)
        c.emit("local.get", dst).emit("i32.const", WIDE_STEP_BYTES).emit("i32.add")
        c.emit("local.set", dst)

    # src = w + (j / QPANEL) * 2 * panel_bytes (a wide slot), end = src + panel_bytes
    c.emit("local.get", arg["w"]).emit("local.get", j)
    c.emit("i32.const", QPANEL.bit_length() - 2).emit("i32.shr_u")
    c.emit("local.get", f.panel_bytes).emit("i32.mul").emit("i32.add").emit("local.tee", src)
    c.emit("local.get", f.panel_bytes).emit("i32.add").emit("local.set", end)
    c.emit("local.get", arg["ws"]).emit("local.set", dst)
    strided_loop(c, src, SEVEN_STEP_BYTES, end, step)
