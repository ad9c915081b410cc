"""The tiles of the conv family (see ``conv``): the register-blocked tile over ``rows`` output
channels x ``regs`` registers of columns, interior or masked; the depthwise tile; and the
column-by-column tile with a bounds check per tap that covers what a vector tile may not
read.

The vector and column tiles walk the taps the same way (``_taps``): kernel rows inside the
input, then the kw columns of each, and for each tap a k loop over the input channels whose
weights are adjacent in the packed block, 16 bytes per channel, addressed from a pointer
biased by the tap's end with ``kk`` counting up to 0; the pixel pointer steps one input plane
per channel. A vector tile's channel loop runs 4 or 8 channels per iteration, in
the order they should run: the conv family is compiled at cranelift opt level ``"none"``
(``build.FAMILY_OPT_LEVELS``), which keeps that order, where ``"speed"`` hoisted the loads of
an unrolled body and spilled the accumulators. Unrolled 4 times at ``"none"`` the tile runs 26
instructions per channel against 38 at ``"speed"`` not unrolled (the 8 register moves
``vfmadd213ps`` leaves at each back-edge are shared by 4 channels): ResNet-18's and the real
models' dense convs ran 1.0-1.2x faster in an interleaved A/B. With a fused activation the
register allocator spilled ``vmctx`` out of that loop, and 8 channels per iteration measured
better there (``ACTIVATION_CHANNEL_UNROLL``; bench/README.md). Every load reloads the memory
base at ``"none"``, which cost the depthwise tile (same function) up to 0.8x until it loaded
less.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from . import activations
from .isa import ISAS, Isa

if TYPE_CHECKING:
    from .conv import Frame

Tile: TypeAlias = "Callable[[Frame, int, int, str, bool], None]"
"""A tile generator: ``(frame, rows, regs, mode, masked)``."""

CHANNEL_BYTES = 16
"""Bytes of one input channel's weights in a packed block (4 output channels)."""

CHANNEL_UNROLL, ACTIVATION_CHANNEL_UNROLL = 4, 8
"""Input channels per iteration of a vector tile's channel loop, in the plain conv and in a
conv with a fused activation. NOTE: measured, not derived: with an activation the register
allocator spills ``vmctx`` out of the 4-channel loop (31 instructions per channel against
26), and 8 channels per iteration got back to 27 (ResNet-18's ``_relu`` convs 1.05-1.25x
the 4-channel loop in an interleaved A/B), where the plain conv ran 0.75-0.97x at 8."""

EVEN_LANES = bytes(4 * lane + byte for lane in (0, 2, 4, 6) for byte in range(4))
"""The ``i8x16.shuffle`` of two f32x4 registers that keeps lanes 0 and 2 of each: the
pixels of a stride-2 register loaded as two contiguous ones."""

LANE_BROADCAST = [bytes(4 * lane + byte for _ in range(4) for byte in range(4))
                  for lane in range(4)]
"""The ``i8x16.shuffle`` of a register with itself that copies lane ``lane`` to all four."""

ODD_LANES = bytes(4 * lane + byte for lane in (1, 3, 5, 7) for byte in range(4))
"""The shuffle that keeps lanes 1 and 3 of each: the stride-2 pixels one column on."""


def _taps(f: Frame, start_column: Callable[[], None], tap: Callable[[], None]) -> None:
    """For each kernel row inside the input and each of its kw columns: ``tap()`` with ``pj``
    at the tap's first pixel and ``wp`` at its weights; ``start_column`` pushes the input
    column of the tile's first lane at tap 0 (may be negative), kept in ``jcol``."""
    c = f.c
    f.get("wb")
    f.set("wp")
    f.get("rows_in")
    f.set("t")
    f.get("xrow")
    f.set("prow")
    c.emit("block").emit("loop")
    f.get("t").emit("i32.eqz").emit("br_if", 1)
    start_column()
    f.set("jcol")
    f.get("prow", "jcol").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    f.set("pj")
    f.get("kw")
    f.set("j")
    c.emit("loop")
    tap()
    f.add("wp", "tapw")
    f.add("pj", "dw_bytes")
    f.add("jcol", "dw")
    f.add("j", -1)
    f.get("j").emit("br_if", 0)
    c.emit("end")
    f.add("prow", "dh_row")
    f.add("t", -1)
    c.emit("br", 0).emit("end").emit("end")


def _channels(f: Frame, body: Callable[[int], None], unroll: int = 1) -> None:
    """``body(offset)`` for each input channel: pixels at ``pp``, weights at ``wend + kk +
    offset``; ``unroll`` channels per loop iteration while that many are left, then one by
    one."""
    c = f.c
    f.get("pj")
    f.set("pp")
    f.get("wp", "tapw").emit("i32.add")
    f.set("wend")
    c.emit("i32.const", 0).emit("local.get", f.v["tapw"]).emit("i32.sub")
    f.set("kk")
    if unroll > 1:
        c.emit("block").emit("loop")
        f.get("kk").emit("i32.const", unroll * CHANNEL_BYTES).emit("i32.add")
        c.emit("i32.const", 0).emit("i32.gt_s").emit("br_if", 1)
        for u in range(unroll):
            body(u * CHANNEL_BYTES)
            f.add("pp", "plane")
        f.add("kk", unroll * CHANNEL_BYTES)
        c.emit("br", 0).emit("end").emit("end")
        f.get("kk").emit("if")
    c.emit("loop")
    body(0)
    f.add("pp", "plane")
    f.get("kk").emit("i32.const", CHANNEL_BYTES).emit("i32.add").emit("local.tee", f.v["kk"])
    c.emit("br_if", 0).emit("end")
    if unroll > 1:
        c.emit("end")


def _weight(f: Frame, isa: Isa, r: int, offset: int = 0) -> None:
    """Push the weight of channel row ``r`` at the current tap and channel (``offset`` bytes
    on), broadcast."""
    f.get("wend", "kk").emit("i32.add")
    isa.load_splat(f.c, offset + 4 * r)


def vector_tile(f: Frame, rows: int, regs: int, mode: str, masked: bool) -> None:
    """Y[oc:oc+rows, oy, tx:tx+regs*lanes] = epilogue(bias + sum over taps), pixels loaded
    per register (``unit``: contiguous; ``pair``: stride 2, two contiguous registers
    shuffled; ``gather``: lane by lane), ``masked`` to the row."""
    c, isa = f.c, f.isa
    acc = [[c.local(isa.valtype) for _ in range(regs)] for _ in range(rows)]
    pixels = [c.local(isa.valtype) for _ in range(regs)]
    weights = [c.local(isa.valtype) for _ in range(rows)]
    masks = [c.local("v128") for _ in range(regs)] if masked else []
    columns = c.local("v128") if masked else -1
    block = c.local(isa.valtype)
    for r in range(rows):
        f.get("bg", "oc").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        isa.load_splat(c, 4 * r)
        for reg in range(regs):
            c.emit("local.tee" if reg + 1 < regs else "local.set", acc[r][reg])

    def start_column() -> None:
        f.get("tx", "sw").emit("i32.mul").emit("local.get", f.arg["pw"]).emit("i32.sub")

    def step(offset: int) -> None:
        for reg in range(regs):
            _load_pixels(f, isa, mode, reg)
            if masked:
                c.emit("local.get", masks[reg]).emit("v128.and")
            c.emit("local.set", pixels[reg])
        shuffled = isa.vector and rows == isa.lanes
        if shuffled:
            # One load of the block's 4 weights, each lane broadcast by a shuffle (pshufd):
            # 5 instructions against 8 for 4 scalar loads and broadcasts.
            f.get("wend", "kk").emit("i32.add")
            isa.load(c, offset)
            c.emit("local.set", block)
        for r in range(rows):
            # NOTE: each broadcast just before its multiply-adds: compiled at opt level
            # "none" the written order is kept, and 4 broadcasts live at once spilled.
            if shuffled:
                c.emit("local.get", block).emit("local.get", block)
                c.emit("i8x16.shuffle", LANE_BROADCAST[r])
            else:
                _weight(f, isa, r, offset)
            c.emit("local.set", weights[r])
            for reg in range(regs):
                # The weight first: vfmadd213ps overwrites it, and it has fewer uses.
                c.emit("local.get", weights[r]).emit("local.get", pixels[reg])
                isa.madd_into(c, acc[r][reg])

    def tap() -> None:
        for reg in range(regs):
            _mask(f, "jcol", reg, 0, columns)
            c.emit("local.set", masks[reg])
        _channels(f, step, unroll)

    unroll = ACTIVATION_CHANNEL_UNROLL if f.epilogue else CHANNEL_UNROLL
    _taps(f, start_column, tap if masked else lambda: _channels(f, step, unroll))
    _store_tile(f, rows, regs, acc, masked)


def _mask(f: Frame, column: str, reg: int, tap: int, scratch: int) -> None:
    """Push the mask of the lanes of register ``reg`` whose input column ``column + tap +
    (reg * lanes + lane) * sw`` is inside the row, [0, w); ``scratch`` is a v128 local."""
    c = f.c
    f.get(column).emit("i32.const", reg * f.isa.lanes).emit("local.get", f.arg["sw"])
    c.emit("i32.mul").emit("i32.add")
    if tap:
        c.emit("i32.const", tap).emit("i32.add")
    c.emit("f32.convert_i32_s").emit("f32x4.splat")
    c.emit("local.get", f.lane_columns).emit("f32x4.add").emit("local.tee", scratch)
    f.isa.const(c, 0.0)
    c.emit("f32x4.ge").emit("local.get", scratch).emit("local.get", f.width)
    c.emit("f32x4.lt").emit("v128.and")


def _store_tile(f: Frame, rows: int, regs: int, acc: list[list[int]], masked: bool) -> None:
    """Store a tile: whole registers, or lane by lane when a masked tile passes ``ow``."""
    c, isa = f.c, f.isa
    if not masked:
        _store(f, isa, rows, regs, acc)
        return
    f.get("tx").emit("i32.const", regs * isa.lanes).emit("i32.add")
    f.get("ow").emit("i32.le_u").emit("if")
    _store(f, isa, rows, regs, acc)
    c.emit("else")
    _store_lanes(f, rows, regs, acc)
    c.emit("end")


def start_kernel_rows(f: Frame, regs: int, taps: int, masked: bool, pointer: str
                      ) -> list[list[int]]:
    """Before a tile's loop over kernel rows: ``jcol = tx * sw - pw`` (the input column of the
    first lane at tap 0); with ``masked``, the lane masks of every tap and register (v128
    locals, returned, ``[tap][reg]``); ``wp = wb``, ``t = rows_in`` and ``pointer = xrow +
    jcol * 4``."""
    c = f.c
    f.get("tx", "sw").emit("i32.mul").emit("local.get", f.arg["pw"]).emit("i32.sub")
    f.set("jcol")
    masks: list[list[int]] = []
    if masked:
        masks = [[c.local("v128") for _ in range(regs)] for _ in range(taps)]
        scratch = c.local("v128")
        for j in range(taps):
            for reg in range(regs):
                _mask(f, "jcol", reg, j, scratch)
                c.emit("local.set", masks[j][reg])
    f.get("wb")
    f.set("wp")
    f.get("rows_in")
    f.set("t")
    f.get("xrow", "jcol").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    f.set(pointer)
    return masks


def depthwise_tile(f: Frame, rows: int, regs: int, mode: str, masked: bool) -> None:
    """Y[oc, oy, tx:tx+regs*lanes] of a depthwise conv with kw == 3, dw == 1 (one input and
    one output channel per group): per kernel row, its 3 weights broadcast and the 3 taps of
    every register multiply-added at once, with no channel loop."""
    c, isa = f.c, f.isa
    taps = 3
    acc = [[c.local(isa.valtype) for _ in range(regs)]]
    weights = [c.local(isa.valtype) for _ in range(taps)]
    pixel = c.local(isa.valtype)
    f.get("bg", "oc").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    isa.load_splat(c)
    for reg in range(regs):
        c.emit("local.tee" if reg + 1 < regs else "local.set", acc[0][reg])
    masks = start_kernel_rows(f, regs, taps, masked, "pp")
    c.emit("block").emit("loop")
    f.get("t").emit("i32.eqz").emit("br_if", 1)
    for j in range(taps):
        f.get("wp")
        isa.load_splat(c, j * CHANNEL_BYTES)
        c.emit("local.set", weights[j])
    halves = [c.local("v128") for _ in range(2)] if mode == "pair" else []
    row = [c.local("v128") for _ in range(regs + 1)] if mode == "unit" else []
    if mode == "unit":
        f.get("pp")
        isa.load(c)
        c.emit("local.set", row[0])
    for reg in range(regs):
        if mode == "pair":
            for half, local in enumerate(halves):
                f.get("pp")
                isa.load(c, (2 * reg + half) * 4 * isa.lanes)
                c.emit("local.set", local)
        if mode == "unit":
            f.get("pp")
            isa.load(c, (reg + 1) * 4 * isa.lanes)
            c.emit("local.set", row[reg + 1])
        for j in range(taps):
            if mode == "pair" and j < 2:
                # taps 0 and 1 read the even and the odd lanes of the same two registers
                c.emit("local.get", halves[0]).emit("local.get", halves[1])
                c.emit("i8x16.shuffle", ODD_LANES if j else EVEN_LANES)
            elif mode == "unit":
                # taps 1 and 2: the row's registers shifted by 1 and 2 floats (palignr), one
                # load per register instead of one per tap
                c.emit("local.get", row[reg])
                if j:
                    c.emit("local.get", row[reg + 1])
                    c.emit("i8x16.shuffle", bytes(range(4 * j, 4 * j + 16)))
            else:
                _load_pixels(f, isa, mode, reg, 4 * j)
            if masked:
                c.emit("local.get", masks[j][reg]).emit("v128.and")
            c.emit("local.set", pixel)
            c.emit("local.get", weights[j]).emit("local.get", pixel)
            isa.madd_into(c, acc[0][reg])
    f.add("wp", taps * CHANNEL_BYTES)
    f.add("pp", "dh_row")
    f.add("t", -1)
    c.emit("br", 0).emit("end").emit("end")
    _store_tile(f, 1, regs, acc, masked)


def _load_pixels(f: Frame, isa: Isa, mode: str, reg: int, offset: int = 0) -> None:
    """Push register ``reg`` of the tile's pixels under the tap at ``pp`` + ``offset``."""
    c = f.c
    if mode == "unit":
        f.get("pp")
        isa.load(c, offset + reg * 4 * isa.lanes)
        return
    if mode == "pair":
        for half in range(2):
            f.get("pp")
            isa.load(c, offset + (2 * reg + half) * 4 * isa.lanes)
        c.emit("i8x16.shuffle", EVEN_LANES)
        return
    for lane in range(isa.lanes):
        f.get("pp").emit("local.get", f.column_offset[reg * isa.lanes + lane])
        c.emit("i32.add").emit("f32.load", 2, offset)
        if isa.vector and lane == 0:
            c.emit("f32x4.splat")
        elif isa.vector:
            c.emit("f32x4.replace_lane", lane)


def column_tiles(f: Frame, rows: int, width: int) -> None:
    """Columns ``tx .. min(tx + width, ow)`` one at a time, scalar, ``rows`` channels, each
    tap checked against the input row."""
    c, scalar = f.c, ISAS["scalar"]
    acc = [c.local("f32") for _ in range(rows)]
    pixel = c.local("f32")
    end = c.local("i32")
    f.get("tx").emit("i32.const", width).emit("i32.add")
    c.emit("local.tee", end).emit("local.get", f.arg["ow"]).emit("local.get", end)
    f.get("ow").emit("i32.lt_u").emit("select").emit("local.set", end)
    f.get("tx")
    f.set("col")

    def start_column() -> None:
        f.get("col", "sw").emit("i32.mul").emit("local.get", f.arg["pw"]).emit("i32.sub")

    def step(offset: int) -> None:
        f.get("pp").emit("f32.load", 2, 0).emit("local.set", pixel)
        for r in range(rows):
            _weight(f, scalar, r, offset)
            c.emit("local.get", pixel)
            scalar.madd_into(c, acc[r])

    def tap() -> None:
        f.get("jcol", "w").emit("i32.lt_u").emit("if")
        _channels(f, step)
        c.emit("end")

    c.emit("block").emit("loop")
    f.get("col").emit("local.get", end).emit("i32.ge_u").emit("br_if", 1)
    for r in range(rows):
        f.get("bg", "oc").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        c.emit("f32.load", 2, 4 * r).emit("local.set", acc[r])
    _taps(f, start_column, tap)
    for r in range(rows):
        _output_address(f, "yg", r, "col")
        c.emit("local.get", acc[r])
        _epilogue(f, scalar, r, "col", 0)
    f.add("col", 1)
    c.emit("br", 0).emit("end").emit("end")


def _output_address(f: Frame, base: str, r: int, column: str) -> None:
    """Push ``base + ((oc + r) * oh + oy) * ow * 4 + column * 4``."""
    c = f.c
    f.get(base, "oc").emit("i32.const", r).emit("i32.add")
    f.get("oh").emit("i32.mul").emit("local.get", f.v["oy"]).emit("i32.add")
    f.get("orow").emit("i32.mul").emit("i32.add").emit("local.get", f.v[column])
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")


def _epilogue(f: Frame, isa: Isa, r: int, column: str, offset: int) -> None:
    """Add R, apply the activations and store the register on the stack at Y + ``offset``
    (its address below it)."""
    c = f.c
    if "r" in f.arg:
        _output_address(f, "rg", r, column)
        isa.load(c, offset)
        isa.op(c, "add")
    for op in f.epilogue:
        activations.apply(c, isa, op)
    isa.store(c, offset)


def _store(f: Frame, isa: Isa, rows: int, regs: int, acc: list[list[int]]) -> None:
    """Store whole registers at Y[oc + r, oy, tx + reg * lanes ...]."""
    for r in range(rows):
        for reg in range(regs):
            _output_address(f, "yg", r, "tx")
            f.c.emit("local.get", acc[r][reg])
            _epilogue(f, isa, r, "tx", reg * 4 * isa.lanes)


def _store_lanes(f: Frame, rows: int, regs: int, acc: list[list[int]]) -> None:
    """Store the lanes of a tile wider than the output row, those left of ``ow``."""
    c, isa, scalar = f.c, f.isa, ISAS["scalar"]
    for reg in range(regs):
        for lane in range(isa.lanes):
            k = reg * isa.lanes + lane
            f.get("tx").emit("i32.const", k).emit("i32.add").emit("local.get", f.arg["ow"])
            c.emit("i32.lt_u").emit("if")
            for r in range(rows):
                _output_address(f, "yg", r, "tx")
                c.emit("local.get", acc[r][reg]).emit("f32x4.extract_lane", lane)
                _epilogue(f, scalar, r, "tx", 4 * k)
            c.emit("end")
