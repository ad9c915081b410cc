"""``f32_winograd_input``: ``B^T d B`` of every 4x4 input tile, read from the unpadded input.

Per channel and row of tiles, ``lanes`` adjacent tiles at a time: each of the tile's 4 input
rows gives the registers ``d0 .. d3`` (lane ``l`` holding column ``2 (j + l) - left + q``:
two loads at the row's columns ``base`` and ``base + 4``, their even and odd lanes apart by
shuffles, and the same from ``base + 2``), then ``B^T`` along the columns (4 registers a
row); ``B^T`` along the rows gives the 16 positions, each stored into its plane of V. A
group whose columns leave the row (the padding) loads lane by lane, zero outside it; a row
outside the input is zeros; a last group of fewer tiles stores only its own lanes.
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code
from .conv_tiles import EVEN_LANES, ODD_LANES
from .isa import Isa
from .winograd import STEPS, combine, count, guarded_lanes, guarded_store, locals_, pointer

ORDER = (1, 2, 0, 3)
"""The rows of ``B^T`` in the order they are stored: rows 1 and 2 share the taps (1, 2),
so those registers die first."""


def body(c: Code, isa: Isa, spec: KernelSpec) -> None:
    """The kernel's body (see the module docstring)."""
    del spec
    g = isa.lanes
    locals_(c, "i32", "img", "ch", "i", "j", "kbytes", "xplane", "vbase", "tile",
            "base", "p", "at", "interior", "dst", "rows", "prow", *(f"row{r}" for r in range(4)),
            *(f"ok{r}" for r in range(4)))
    t = [[c.local(isa.valtype, f"t{r}{s}") for s in range(4)] for r in range(4)]
    d = [c.local(isa.valtype, f"d{q}") for q in range(4)]
    out = c.local(isa.valtype, "out")
    locals_(c, isa.valtype, "l0", "l1", "l2", "l3")
    # kbytes: from one position's planes to the next
    c.get("cs", "count").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").set("kbytes")

    def row_of_tiles() -> None:
        for r in range(4):  # input row 2 i - top + r: its address, and whether it is inside
            c.get("i").emit("i32.const", 1).emit("i32.shl").get("top").emit("i32.sub")
            c.emit("i32.const", r).emit("i32.add").tee("at").get("h").emit("i32.lt_u")
            c.set(f"ok{r}")
            pointer(c, f"row{r}", "xplane", ("at", "w"))
        c.get("ok0", "ok1").emit("i32.and").get("ok2").emit("i32.and").get("ok3")
        c.emit("i32.and").set("rows")
        pointer(c, "tile", "vbase", ("i", "tw"))
        count(c, "j", lambda: c.get("tw"), g, group)

    def group() -> None:
        # base = 2 j - left, the group's first column; fast: its columns base .. base + 2 g
        # + 2 and its 4 rows inside the input, and g tiles left in the row
        c.get("j").emit("i32.const", 1).emit("i32.shl").get("left").emit("i32.sub").tee("base")
        c.emit("i32.const", 0).emit("i32.ge_s")
        c.get("base").emit("i32.const", 2 * g + 2).emit("i32.add").get("w").emit("i32.le_s")
        c.emit("i32.and").tee("interior")
        c.get("j").emit("i32.const", g).emit("i32.add").get("tw").emit("i32.le_u")
        c.emit("i32.and").get("rows").emit("i32.and")
        with c.if_():
            tiles(fast=True)
            c.emit("else")
            tiles(fast=False)

    def tiles(fast: bool) -> None:
        for r in range(4):
            if fast:
                _interior(c, isa, f"row{r}", d)
                _transform(c, isa, d, t[r])
                continue
            c.get(f"ok{r}")
            with c.if_():
                c.get("interior")
                with c.if_():
                    _interior(c, isa, f"row{r}", d)
                    c.emit("else")
                    for q in range(4):
                        guarded_lanes(c, isa, f"row{r}", "base", q, 2, "w")
                        c.set(d[q])
                _transform(c, isa, d, t[r])
                c.emit("else")
                for s in range(4):
                    isa.const(c, 0.0)
                    c.set(t[r][s])
        for a in ORDER:  # position 4 a + s at dst = tile + 4 j + (4 a + s) * kbytes
            c.get("tile", "j").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.get("kbytes").emit("i32.const", 4 * a).emit("i32.mul").emit("i32.add").set("dst")
            for s in range(4):
                combine(c, isa, [t[r][s] for r in range(4)], STEPS[a])
                c.set(out)
                if fast or not isa.vector:
                    c.get("dst", out)
                    isa.store(c)
                else:  # the plane's row of tiles, its tiles from j below tw
                    c.get("dst", "j").emit("i32.const", 2).emit("i32.shl").emit("i32.sub")
                    c.set("prow")
                    guarded_store(c, isa, out, "prow", "j", 0, "tw")
                c.get("dst", "kbytes").emit("i32.add").set("dst")

    def channel() -> None:
        pointer(c, "xplane", "x", ("img", "cs", "h", "w"), ("ch", "h", "w"))
        pointer(c, "vbase", "v", ("ch", "count"), ("img", "th", "tw"))
        count(c, "i", lambda: c.get("th"), 1, row_of_tiles)

    count(c, "img", lambda: c.get("n"), 1, lambda: count(c, "ch", lambda: c.get("c"), 1,
                                                         channel))


def _interior(c: Code, isa: Isa, row: str, d: list[int]) -> None:
    """``d0 .. d3`` of a group whose columns are all inside the row at ``row``."""
    pointer(c, "p", row, ("base",))
    if not isa.vector:
        for q in range(4):
            c.get("p").emit("f32.load", 2, 4 * q).set(d[q])
        return
    for k, offset in enumerate((0, 16, 8, 24)):  # columns base, base + 4, base + 2, base + 6
        c.get("p").emit("v128.load", 2, offset).set(f"l{k}")
    for q, (first, lanes) in enumerate(((0, EVEN_LANES), (0, ODD_LANES), (2, EVEN_LANES),
                                        (2, ODD_LANES))):
        c.get(f"l{first}", f"l{first + 1}").emit("i8x16.shuffle", lanes).set(d[q])


def _transform(c: Code, isa: Isa, d: list[int], t: list[int]) -> None:
    """``t = B^T d`` along the columns of one input row."""
    for s, step in enumerate(STEPS):
        combine(c, isa, d, step)
        c.set(t[s])
