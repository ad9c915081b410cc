"""The conv family's row tile (see ``conv``): for a conv with few input channels and a kernel
row of 3 taps (kw == 3, dw == 1), typically a model's first conv on RGB.

``conv_tiles.vector_tile`` runs a channel loop per tap: with 3 input channels that is 9 loops
of 3 iterations per tile, and their setup cost about as much as the multiply-adds (a 4th
channel ran in the same time). The row tile runs one channel loop per kernel row instead,
each iteration the 3 taps of one channel: 24 multiply-adds of the 4 x 2 tile per iteration.
Its weights for tap ``j`` are ``j * tapw`` bytes on from tap 0's, kept in one pointer per
tap. At stride 2 taps 0 and 1 are the even and odd lanes of the same two loads, and tap 2
is tap 0's lanes one on (the last register's from one more load past the tile). An interior
tile with the 4 channels in lanes and the pixels broadcast ran 1.5x slower: at cranelift's
opt level ``"none"`` a broadcast load is a load and a register broadcast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .conv_tiles import (
    CHANNEL_BYTES,
    EVEN_LANES,
    LANE_BROADCAST,
    ODD_LANES,
    _load_pixels,
    _store_tile,
    start_kernel_rows,
)

if TYPE_CHECKING:
    from .conv import Frame

TAPS = 3
"""Taps of a kernel row the tile runs at once (kw, with dw == 1)."""

NEXT_LANE = bytes(range(4, 20))
"""The ``i8x16.shuffle`` of two registers that takes lanes 1-3 of the first and lane 0 of the
second."""


def row_tile(f: Frame, rows: int, regs: int, mode: str, masked: bool) -> None:
    """Y[oc:oc+rows, oy, tx:tx+regs*lanes] of a conv with kw == TAPS and dw == 1, as
    ``conv_tiles.vector_tile`` computes it (``mode`` ``unit`` or ``pair``, ``masked`` to the
    row), with the kernel row's taps inside the channel loop; ``rows`` is the 4 of a packed
    block."""
    c, isa = f.c, f.isa
    acc = [[c.local(isa.valtype) for _ in range(regs)] for _ in range(rows)]
    pixels = [c.local(isa.valtype) for _ in range(regs)]
    weight, block = c.local(isa.valtype), c.local(isa.valtype)
    tap_weights = [c.local("i32") for _ in range(TAPS)]
    for r in range(rows):
        f.get("bg", "oc").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        isa.load_splat(c, 4 * r)
        for reg in range(regs):
            c.emit("local.tee" if reg + 1 < regs else "local.set", acc[r][reg])
    masks = start_kernel_rows(f, regs, TAPS, masked, "prow")
    c.emit("block").emit("loop")
    f.get("t").emit("i32.eqz").emit("br_if", 1)
    f.get("prow")
    f.set("pp")
    # tap_weights[j] = wp + (j + 1) * tapw, with kk = -tapw counting up to 0 by channel
    f.get("wp")
    for j, local in enumerate(tap_weights):
        f.get("tapw").emit("i32.add").emit("local.tee" if j + 1 < TAPS else "local.set", local)
    c.emit("i32.const", 0).emit("local.get", f.v["tapw"]).emit("i32.sub")
    f.set("kk")
    c.emit("loop")
    halves = [[c.local("v128") for _ in range(2)] for _ in range(regs)]
    evens = [c.local("v128") for _ in range(regs)]
    for j in range(TAPS):
        for reg in range(regs):
            if mode == "pair" and j < 2:
                # taps 0 and 1 read the even and the odd lanes of the same two registers
                if j == 0:
                    for half, local in enumerate(halves[reg]):
                        f.get("pp")
                        isa.load(c, (2 * reg + half) * 4 * isa.lanes)
                        c.emit("local.set", local)
                c.emit("local.get", halves[reg][0]).emit("local.get", halves[reg][1])
                c.emit("i8x16.shuffle", ODD_LANES if j else EVEN_LANES)
                if j == 0:
                    c.emit("local.tee", evens[reg])
            elif mode == "pair":
                # tap 2: tap 0's lanes one on, the last from the next register's tap 0 (past
                # the tile: the first float of one more load)
                c.emit("local.get", evens[reg])
                if reg + 1 < regs:
                    c.emit("local.get", evens[reg + 1])
                else:
                    f.get("pp")
                    isa.load(c, 2 * regs * 4 * isa.lanes)
                c.emit("i8x16.shuffle", NEXT_LANE)
            else:
                _load_pixels(f, isa, mode, reg, 4 * j)
            if masked:
                c.emit("local.get", masks[j][reg]).emit("v128.and")
            c.emit("local.set", pixels[reg])
        c.emit("local.get", tap_weights[j])
        f.get("kk").emit("i32.add")
        isa.load(c)
        c.emit("local.set", block)
        for r in range(rows):
            c.emit("local.get", block).emit("local.get", block)
            c.emit("i8x16.shuffle", LANE_BROADCAST[r]).emit("local.set", weight)
            for reg in range(regs):
                c.emit("local.get", weight).emit("local.get", pixels[reg])
                isa.madd_into(c, acc[r][reg])
    f.add("pp", "plane")
    f.get("kk").emit("i32.const", CHANNEL_BYTES).emit("i32.add").emit("local.tee", f.v["kk"])
    c.emit("br_if", 0).emit("end")
    f.get("wp", "tapw").emit("i32.const", TAPS).emit("i32.mul").emit("i32.add")
    f.set("wp")
    f.add("prow", "dh_row")
    f.add("t", -1)
    c.emit("br", 0).emit("end").emit("end")
    _store_tile(f, rows, regs, acc, masked)
