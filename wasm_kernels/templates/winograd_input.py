"""``f32_winograd[4]_input``: ``B^T d B`` of every (m + 2)^2 input tile, read from the
unpadded input (F(m x m, 3x3), m = 2 or 4).

Per channel and row of tiles, ``lanes`` adjacent tiles at a time: each of the tile's m + 2
input rows gives the registers ``d0 ..`` (lane ``l`` holding column ``m (j + l) - left +
q``: for m = 2, loads at the row's columns ``base`` and ``base + 4`` with their even and odd
lanes apart by shuffles, and the same from ``base + 2``; for m = 4, a 4x4 transpose of the
loads at ``base``, ``base + 4``, ... ``base + 16``), then ``B^T`` along the columns; ``B^T``
along the rows gives the (m + 2)^2 positions, each stored into its plane of V. The first
group of a row padded by one column (``base`` = -1, the usual 'same' 3x3 conv) loads from
column 0 and shifts a zero into the first lane (``_loads``); any other group whose columns
leave the row loads whole the registers inside the row and lane by lane the others, zero
outside it (the scalar ISA: each ``d`` lane by lane); a row outside the input is zeros; only
a last group of 1-3 tiles stores part of a register (``_partial_store``).

NOTE: the groups at a row's ends were most of the time: at 52x52 with F(4x4) the first and
the last group of every row and every group of the first and last rows (58% of the groups)
loaded and stored lane by lane, ~4x the instructions of an interior group.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from ..abi import KernelSpec
from ..abi_winograd import TRANSFORMS, tile
from ..wasm import Code
from .conv_tiles import EVEN_LANES, ODD_LANES
from .isa import Isa
from .winograd import count, each_plane, guarded_lanes, linear, locals_, pointer, shuffle

ORDER = {2: (1, 2, 0, 3), 4: tuple(range(6))}
"""The rows of ``B^T`` in the order they are stored: for m = 2, rows 1 and 2 share the
taps (1, 2), so those registers die first."""


def body(c: Code, isa: Isa, spec: KernelSpec) -> None:
    """The kernel's body (see the module docstring)."""
    m, g = tile(spec.op), isa.lanes
    a, bt = m + 2, TRANSFORMS[tile(spec.op)][0]
    reach = (20 if m == 4 else 10) if isa.vector else a  # columns a fast group reads
    locals_(c, "i32", "img", "ch", "i", "j", "kbytes", "xplane", "vbase", "tile", "base", "p",
            "at", "interior", "shifted", "whole", "two", "three", "dst", "rows",
            *(f"row{r}" for r in range(a)), *(f"ok{r}" for r in range(a)))
    t = [[c.local(isa.valtype, f"t{r}_{s}") for s in range(a)] for r in range(a)]
    d = [c.local(isa.valtype, f"d{q}") for q in range(a)]
    out = c.local(isa.valtype, "out")
    if isa.vector:
        locals_(c, "v128", *(f"l{k}" for k in range(5)), *(f"s{k}" for k in range(4)), "zero")
        isa.const(c, 0.0)
        c.set("zero")
    # kbytes: from one position's planes to the next
    c.get("cs", "count").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").set("kbytes")

    def row_of_tiles() -> None:
        for r in range(a):  # input row m i - top + r: its address, and whether it is inside
            c.get("i").emit("i32.const", m).emit("i32.mul").get("top").emit("i32.sub")
            c.emit("i32.const", r).emit("i32.add").tee("at").get("h").emit("i32.lt_u")
            c.set(f"ok{r}")
            pointer(c, f"row{r}", "xplane", ("at", "w"))
        c.get("ok0")
        for r in range(1, a):
            c.get(f"ok{r}").emit("i32.and")
        c.set("rows")
        pointer(c, "tile", "vbase", ("i", "tw"))
        count(c, "j", lambda: c.get("tw"), g, group)

    def group() -> None:
        # base = m j - left, the group's first column; interior: the columns it reads inside
        # the row; shifted: base = -1 and the columns after it inside (vector ISAs); whole: g
        # tiles left in the row
        c.get("j").emit("i32.const", m).emit("i32.mul").get("left").emit("i32.sub").tee("base")
        c.emit("i32.const", 0).emit("i32.ge_s")
        c.get("base").emit("i32.const", reach).emit("i32.add").get("w").emit("i32.le_s")
        c.emit("i32.and").set("interior")
        if isa.vector:
            c.get("base").emit("i32.const", -1).emit("i32.eq")
            c.get("w").emit("i32.const", reach - 1).emit("i32.ge_s").emit("i32.and")
            c.set("shifted")
        if isa.vector:  # two, three: 2 or 3 tiles left in the row
            for name, tiles_left in (("two", 2), ("three", 3)):
                c.get("j").emit("i32.const", tiles_left).emit("i32.add").get("tw")
                c.emit("i32.le_u").set(name)
        c.get("j").emit("i32.const", g).emit("i32.add").get("tw").emit("i32.le_u").tee("whole")
        c.get("rows").emit("i32.and")
        with c.if_():
            either(lambda: tiles(loads=False), lambda: tiles(loads=True),
                   lambda: tiles(loads=None))
            c.emit("else")
            tiles(loads=None)

    def either(interior: Callable[[], None], shifted: Callable[[], None],
               other: Callable[[], None]) -> None:
        """``interior()`` if the group's columns are inside the row, else ``shifted()`` if
        they are but the first (vector ISAs), else ``other()``."""
        c.get("interior")
        with c.if_():
            interior()
            c.emit("else")
            if not isa.vector:
                other()
                return
            c.get("shifted")
            with c.if_():
                shifted()
                c.emit("else")
                other()

    def tiles(loads: bool | None) -> None:
        """The group: with ``loads`` every row is inside the input, its columns loaded whole
        (shifted by a lane if True) and the group is whole; with None each row is checked."""
        for r in range(a):
            if loads is not None:
                _loads(c, isa, m, f"row{r}", d, shifted=loads)
                _transform(c, isa, bt, d, t[r])
                continue
            c.get(f"ok{r}")
            with c.if_():
                either(partial(_loads, c, isa, m, f"row{r}", d, False),
                       partial(_loads, c, isa, m, f"row{r}", d, True),
                       partial(guarded, f"row{r}"))
                _transform(c, isa, bt, d, t[r])
                c.emit("else")
                for s in range(a):
                    isa.const(c, 0.0)
                    c.set(t[r][s])
        stores(whole=loads is not None or not isa.vector)

    def guarded(row: str) -> None:
        """``d0 ..`` of a group whose columns leave the row at ``row``: each register of
        columns (``_interior``'s) loaded whole where it is inside the row, else lane by
        lane, zero outside it; the scalar ISA's ``d`` lane by lane."""
        if not isa.vector:
            for q in range(a):
                guarded_lanes(c, isa, row, "base", q, m, "w")
                c.set(d[q])
            return
        for k, first in enumerate(COLUMNS[m]):
            # base + first >= 0 and base + first + 4 <= w
            c.get("base").emit("i32.const", first).emit("i32.add").tee("at")
            c.emit("i32.const", 0).emit("i32.ge_s")
            c.get("at").emit("i32.const", isa.lanes).emit("i32.add").get("w").emit("i32.le_s")
            c.emit("i32.and")
            with c.if_():
                pointer(c, "p", row, ("at",))
                c.get("p").emit("v128.load", 2, 0).set(f"l{k}")
                c.emit("else")
                guarded_lanes(c, isa, row, "base", first, 1, "w")
                c.set(f"l{k}")
        _deinterleave(c, m, d)

    def stores(whole: bool) -> None:
        """The group's (m + 2)^2 positions from its rows ``t``, stored whole (``whole``, or
        the group is) or else lane by lane."""
        store_positions(c, isa, m, bt, t, out, whole)

    each_plane(c, row_of_tiles)


def _partial_store(c: Code, out: int) -> None:
    """Store the lanes of ``out`` at ``dst`` for the 1-3 tiles left in a row (``two``,
    ``three``): lanes 0-1 as one i64, lane 2 or lane 0 as an f32."""
    c.get("two")
    with c.if_():
        c.get("dst", out).emit("i64x2.extract_lane", 0).emit("i64.store", 2, 0)
        c.get("three")
        with c.if_():
            c.get("dst", out).emit("f32x4.extract_lane", 2).emit("f32.store", 2, 8)
        c.emit("else")
        c.get("dst", out).emit("f32x4.extract_lane", 0).emit("f32.store", 2, 0)


COLUMNS = {2: (0, 4, 2, 6), 4: (0, 4, 8, 12, 16)}
"""The first column (after ``base``) of each register ``l0 ..`` a group's rows load."""

SHIFT = (3, 4, 5, 6)
"""The lanes of two registers of columns ``c .. c + 7`` that hold columns ``c + 3 .. c + 6``
(one column before the second register)."""


def _loads(c: Code, isa: Isa, m: int, row: str, d: list[int], shifted: bool) -> None:
    """``d0 ..`` of a group whose columns are all inside the row at ``row``; or, ``shifted``,
    of the group at ``base`` = -1 whose other columns are: ``l0 ..`` from the registers at
    column 0, one lane later (a zero first), and the last of them loaded where it lies."""
    if not shifted:
        pointer(c, "p", row, ("base",))
        _interior(c, isa, m, d)
        return
    # s_k: columns 4 k .. 4 k + 3; l_k: columns 4 k - 1 .. 4 k + 2
    for k in range(2 if m == 2 else 4):
        c.get(row).emit("v128.load", 2, 16 * k).set(f"s{k}")
    shuffle(c, "zero", "s0", (0, 4, 5, 6))
    c.set("l0")
    if m == 2:  # l1 = columns 3 .. 6, l2 = 1 .. 4, l3 = 5 .. 8
        shuffle(c, "s0", "s1", SHIFT)
        c.set("l1")
        shuffle(c, "s0", "s1", (1, 2, 3, 4))
        c.set("l2")
        c.get(row).emit("v128.load", 2, 20).set("l3")
    else:
        for k in range(1, 4):
            shuffle(c, f"s{k - 1}", f"s{k}", SHIFT)
            c.set(f"l{k}")
        c.get(row).emit("v128.load", 2, 60).set("l4")
    _deinterleave(c, m, d)


def _interior(c: Code, isa: Isa, m: int, d: list[int]) -> None:
    """``d0 ..`` of a group whose columns are all inside the row, from ``p``, its first."""
    if not isa.vector:
        for q in range(m + 2):
            c.get("p").emit("f32.load", 2, 4 * q).set(d[q])
        return
    for k, first in enumerate(COLUMNS[m]):  # l_k: columns base + first .. base + first + 3
        c.get("p").emit("v128.load", 2, 4 * first).set(f"l{k}")
    _deinterleave(c, m, d)


def _deinterleave(c: Code, m: int, d: list[int]) -> None:
    """``d0 ..`` from the registers ``l0 ..`` of a group's columns (vector ISAs): for m = 2
    columns base, base + 4, base + 2 and base + 6, for m = 4 base, base + 4, ... base +
    16."""
    if m == 2:
        for q, (first, lanes) in enumerate(((0, EVEN_LANES), (0, ODD_LANES), (2, EVEN_LANES),
                                            (2, ODD_LANES))):
            c.get(f"l{first}", f"l{first + 1}").emit("i8x16.shuffle", lanes).set(d[q])
        return
    # d_q = lane q of l0 .. l3 (q < 4); d4, d5 = lanes 0, 1 of l1 .. l4
    for k, (x, y, pick) in enumerate((("l0", "l1", (0, 4, 1, 5)), ("l2", "l3", (0, 4, 1, 5)),
                                      ("l0", "l1", (2, 6, 3, 7)), ("l2", "l3", (2, 6, 3, 7)))):
        shuffle(c, x, y, pick)
        c.set(f"s{k}")
    for q, (x, y, pick) in enumerate((("s0", "s1", (0, 1, 4, 5)), ("s0", "s1", (2, 3, 6, 7)),
                                      ("s2", "s3", (0, 1, 4, 5)), ("s2", "s3", (2, 3, 6, 7)))):
        shuffle(c, x, y, pick)
        c.set(d[q])
    shuffle(c, "l1", "l2", (0, 4, 1, 5))
    c.set("s0")
    shuffle(c, "l3", "l4", (0, 4, 1, 5))
    c.set("s1")
    for q, pick in ((4, (0, 1, 4, 5)), (5, (2, 3, 6, 7))):
        shuffle(c, "s0", "s1", pick)
        c.set(d[q])


def _transform(c: Code, isa: Isa, bt: tuple[tuple[float, ...], ...], d: list[int],
               t: list[int]) -> None:
    """``t = B^T d`` along the columns of one input row."""
    for s, row in enumerate(bt):
        linear(c, isa, row, d)
        c.set(t[s])


def store_positions(c: Code, isa: Isa, m: int, bt: tuple[tuple[float, ...], ...],
                    t: list[list[int]], out: int, whole: bool) -> None:
    """The group's (m + 2)^2 positions, ``B^T`` applied down the columns of its rows ``t``:
    position ``a row + s`` at ``dst = tile + 4 j + (a row + s) * kbytes``, stored whole when
    ``whole``, else whole or lane by lane as the ``whole`` local says."""
    a = m + 2
    for row in ORDER[m]:
        c.get("tile", "j").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        c.get("kbytes").emit("i32.const", a * row).emit("i32.mul").emit("i32.add")
        c.set("dst")
        for s in range(a):
            linear(c, isa, bt[row], [t[r][s] for r in range(a)])
            c.set(out)
            if whole:
                c.get("dst", out)
                isa.store(c)
            else:
                c.get("whole")
                with c.if_():
                    c.get("dst", out)
                    isa.store(c)
                    c.emit("else")
                    _partial_store(c, out)
            c.get("dst", "kbytes").emit("i32.add").set("dst")
