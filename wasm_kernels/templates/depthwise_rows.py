"""The output rows of one depthwise channel (see ``depthwise``): which tiles cover each
row, and where they read, the scratch plane or (``IN_PLACE``) the input plane itself."""

from __future__ import annotations

from collections.abc import Callable

from . import depthwise_tile
from .depthwise_tile import REGS, ROWS, Frame, Kernel
from .loops import strided_loop

IN_PLACE = {(3, 2, 2): 1, (5, 2, 2): REGS, (3, 1, 1): REGS, (5, 1, 1): REGS,
            (3, 2, 1): REGS}
"""The unrolled kernels (k, sh, sw) whose interior rows read the input plane in place
(``in_place_rows``) when their output rows have at least this many registers: a 5x5
kernel's 7-wide rows at stride 2 (every tile at an edge of the plane, most input rows in
the border) ran ~6% slower in place than copied; at column stride 1 rows narrower than a
tile keep the copy."""


def rows(f: Frame, kernel: Kernel | None, mode: str = "") -> None:
    """Every output row of the channel with ``kernel``'s unrolled taps, ``ROWS`` rows per
    tile while they last (None: runtime loops over the taps, one row per tile, pixels
    loaded per ``mode``)."""
    weights = depthwise_tile.hoist_weights(f, kernel)

    def rows(count: int, narrow: bool) -> None:
        # pbase = scratch + oy * sh * prow; yrow = ybase + oy * orow
        f.get("scratch", "oy", "sh").emit("i32.mul").emit("local.get", f.v["prow"])
        f.c.emit("i32.mul").emit("i32.add")
        f.set("pbase")
        f.get("ybase", "oy", "orow").emit("i32.mul").emit("i32.add")
        f.set("yrow")
        columns(f, lambda regs, store: depthwise_tile.tile(
            f, kernel, mode, weights, (count, regs), store), narrow)

    def every_row(narrow: bool) -> None:
        f.c.emit("i32.const", 0)
        f.set("oy")
        if kernel is not None:
            strided_loop(f.c, f.v["oy"], ROWS, f.arg["oh"], lambda: rows(ROWS, narrow))
        strided_loop(f.c, f.v["oy"], 1, f.arg["oh"], lambda: rows(1, narrow))

    _narrow_or_not(f, kernel is not None, every_row)


def _narrow_or_not(f: Frame, narrow: bool, body: Callable[[bool], None]) -> None:
    """``body(True)`` (narrow tiles, see ``columns``) for rows 5 to 7 wide when ``narrow``
    (and a vector ISA), else ``body(False)``: a separate copy of the row loops, so that the
    loops of wider rows are emitted as they were without it (with the narrow tile inside
    them, cranelift's code for 112- and 56-wide planes ran 5-7% slower)."""
    c, lanes = f.c, f.isa.lanes
    if not narrow or lanes == 1:
        body(False)
        return
    f.get("ow").emit("i32.const", lanes).emit("i32.gt_u")
    f.get("ow").emit("i32.const", REGS * lanes).emit("i32.lt_u").emit("i32.and")
    c.emit("if")
    body(True)
    c.emit("else")
    body(False)
    c.emit("end")


def in_place_rows(f: Frame, kernel: Kernel) -> None:
    """Every output row of the channel with an ``IN_PLACE`` kernel: rows ``ostart`` ..
    ``iend`` - 1 from the input plane, ``ROWS`` at a time while they last (with ``top``:
    rows 0 and 1 as well, the ``k // 2`` rows above the plane a zero register; with
    ``bottom``, stride 1: the rows from ``iend`` on too, the rows below the plane a zero
    register), the others from the scratch plane."""
    c = f.c
    weights = depthwise_tile.hoist_weights(f, kernel)
    k, stride, _ = kernel

    def rows(count: int, in_place: bool, narrow: bool, outside: tuple[int, int] = (0, 0)
             ) -> None:
        if in_place:
            # pbase = xplane + (oy * s - ph) * row - pw * 4
            f.get("xplane", "oy").emit("i32.const", stride).emit("i32.mul")
            f.get("ph").emit("i32.sub").emit("local.get", f.v["row"]).emit("i32.mul")
            c.emit("i32.add")
            f.get("pw").emit("i32.const", 2).emit("i32.shl").emit("i32.sub")
        else:
            f.get("scratch", "oy").emit("i32.const", stride).emit("i32.mul")
            f.get("prow").emit("i32.mul").emit("i32.add")
        f.set("pbase")
        f.get("ybase", "oy", "orow").emit("i32.mul").emit("i32.add")
        f.set("yrow")
        columns(f, lambda regs, store: depthwise_tile.tile(
            f, kernel, "", weights, (count, regs), store, in_place, outside), narrow)
        f.add("oy", count)

    def bottom_rows(narrow: bool) -> None:
        # bottom (stride 1, depthwise._plane): the last 2 rows, or the last one, in place,
        # the k // 2 rows below the plane a zero register; else one row in place
        for count in (ROWS, 1):
            f.get("bottom", "oy").emit("i32.const", count).emit("i32.add")
            f.get("oh").emit("i32.eq").emit("i32.and").emit("if")
            rows(count, True, narrow, (0, k // 2))
            c.emit("else")
        rows(1, True, narrow)
        c.emit("end").emit("end")

    def every_row(narrow: bool) -> None:
        c.emit("i32.const", 0)
        f.set("oy")
        # top (depthwise._plane): rows 0 and 1 in place, the k // 2 rows above the plane
        # a zero register
        f.get("top").emit("if")
        rows(ROWS, True, narrow, (k // 2, 0))
        c.emit("end")
        c.emit("block").emit("loop")
        f.get("oy", "oh").emit("i32.ge_u").emit("br_if", 1)
        f.get("oy", "ostart").emit("i32.lt_u").emit("local.get", f.v["oy"])
        f.get("iend").emit("i32.ge_u")
        if stride == 1:
            f.get("bottom").emit("i32.eqz").emit("i32.and")
        c.emit("i32.or").emit("if")
        rows(1, False, narrow)
        c.emit("else")
        f.get("oy").emit("i32.const", ROWS).emit("i32.add").emit("local.get", f.v["iend"])
        c.emit("i32.le_u").emit("if")
        rows(ROWS, True, narrow)
        c.emit("else")
        if stride == 1:
            bottom_rows(narrow)
        else:
            rows(1, True, narrow)
        c.emit("end").emit("end")
        c.emit("br", 0).emit("end").emit("end")

    _narrow_or_not(f, IN_PLACE[kernel] < REGS, every_row)


def columns(f: Frame, tile: depthwise_tile.TileAt, narrow: bool = False) -> None:
    """Tiles of REGS registers from column 0 while they fit, then (more than one register's
    columns left) one such tile moved left to end at ``ow``, else one-register tiles moved
    left to end there; a row narrower than one register is one tile stored lane by lane.
    ``narrow`` (a row 5 to 7 wide, unrolled taps; in place, 3x3 / 2 only): one tile of 2
    registers at column 0 storing its last 4 columns (``depthwise_tile.tile``), not two
    one-register tiles at 0 and ``ow - 4`` (its input rows and weights shared by both)."""
    c, lanes = f.c, f.isa.lanes
    if narrow:
        c.emit("i32.const", 0)
        f.set("tx")
        tile(REGS, "narrow")
        return
    c.emit("i32.const", 0)
    f.set("ox")
    c.emit("block").emit("loop")
    f.get("ox").emit("i32.const", REGS * lanes).emit("i32.add").emit("local.get", f.arg["ow"])
    c.emit("i32.gt_u").emit("br_if", 1)
    f.get("ox")
    f.set("tx")
    tile(REGS, "")
    f.add("ox", REGS * lanes)
    c.emit("br", 0).emit("end").emit("end")
    if lanes > 1:
        # more than one register's columns left, and a full tile fits the row: one full
        # tile moved left to end at ow
        f.get("ow", "ox").emit("i32.sub").emit("i32.const", lanes).emit("i32.gt_u")
        f.get("ow").emit("i32.const", REGS * lanes).emit("i32.ge_u").emit("i32.and")
        c.emit("if")
        f.get("ow").emit("i32.const", REGS * lanes).emit("i32.sub")
        f.set("tx")
        tile(REGS, "")
        f.get("ow")
        f.set("ox")
        c.emit("end")
    if lanes > 1:
        f.get("ow").emit("i32.const", lanes).emit("i32.lt_u").emit("if")
        c.emit("i32.const", 0)
        f.set("tx")
        tile(1, "lanes")
        c.emit("else")
    c.emit("block").emit("loop")
    f.get("ox", "ow").emit("i32.ge_u").emit("br_if", 1)
    # tx = min(ox, ow - lanes)
    f.get("ox", "ow").emit("i32.const", lanes).emit("i32.sub").emit("local.tee", f.v["tx"])
    f.get("ox", "tx").emit("i32.lt_u").emit("select")
    f.set("tx")
    tile(1, "")
    f.add("ox", lanes)
    c.emit("br", 0).emit("end").emit("end")
    if lanes > 1:
        c.emit("end")
