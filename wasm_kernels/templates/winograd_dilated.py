"""``f32_winograd[4]_dilated_input`` and ``f32_winograd[4]_dilated_output_bias[_<act>]``: the
transforms of Winograd F(m x m, 3x3) for a 3x3 conv of dilation ``dil``, over the dilated
plane itself (no phase planes).

A tile of dilation ``dil`` is m x m outputs ``dil`` apart, from an (m + 2)^2 grid of inputs
``dil`` apart. Tile column ``j`` starts at output column ``(j / dil) * m dil + j % dil``
(tile rows likewise): the ``dil`` tiles of a block of ``m dil`` columns interleave, so
``lanes`` adjacent tiles of one block start at adjacent columns, and each of their (m + 2)
input columns (or m output columns) is one register loaded (stored) whole, with no shuffle.
A group of tiles that crosses a block, or a register whose columns leave the row, goes lane
by lane (zero outside the row); a row outside the input is zeros; a last group of 1-3
tiles stores only its lanes.
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..abi_winograd import TRANSFORMS, tile
from ..wasm import Code
from . import activations
from .isa import Isa
from .winograd import (
    count,
    each_output_plane,
    each_plane,
    guarded_store,
    linear,
    locals_,
    output_rows,
    pointer,
)
from .winograd_input import store_positions


def _start(c: Code, index: str, m: int, target: str) -> None:
    """``target`` = the first output row or column of tile ``index``: (index / dil) * m dil
    + index % dil."""
    c.get(index, "dil").emit("i32.div_u").get("dil").emit("i32.mul")
    c.emit("i32.const", m).emit("i32.mul")
    c.get(index, "dil").emit("i32.rem_u").emit("i32.add").set(target)


def _lanes(c: Code, isa: Isa, m: int, shift: str) -> None:
    """``col0 ..``: each lane's tile's first column, less ``shift`` (a local or none);
    ``uniform``: the group's tiles lie in one block (adjacent columns). Tile ``j + l`` is
    phase ``(p + l) % dil`` of block ``b + (p + l) / dil`` for ``j``'s block ``b`` and
    phase ``p``: ``col0 + l + ((p + l) / dil) * (m - 1) dil``, ``col0 + l`` when uniform."""
    g = isa.lanes
    c.get("j", "dil").emit("i32.div_u").tee("at")
    c.get("dil").emit("i32.mul").emit("i32.const", m).emit("i32.mul")
    c.get("j").get("at", "dil").emit("i32.mul").emit("i32.sub").tee("phase").emit("i32.add")
    if shift:
        c.get(shift).emit("i32.sub")
    c.set("col0")
    c.get("phase").emit("i32.const", g).emit("i32.add").get("dil").emit("i32.le_u")
    c.set("uniform")
    if g == 1:
        return
    c.get("uniform")
    with c.if_():
        for lane in range(1, g):
            c.get("col0").emit("i32.const", lane).emit("i32.add").set(f"col{lane}")
        c.emit("else")
        for lane in range(1, g):
            c.get("col0").emit("i32.const", lane).emit("i32.add")
            c.get("phase").emit("i32.const", lane).emit("i32.add").get("dil")
            c.emit("i32.div_u").get("dil").emit("i32.mul").emit("i32.const", m - 1)
            c.emit("i32.mul").emit("i32.add").set(f"col{lane}")


def _offset(c: Code, q: int) -> None:
    """Push ``q * dil``."""
    c.emit("i32.const", q).get("dil").emit("i32.mul")


def _load(c: Code, isa: Isa, row: str, q: int, target: int) -> None:
    """``target`` = the inputs of column ``col_l + q dil`` of the row at ``row``, zero outside
    ``[0, w)``: one load when the group is uniform and inside, zeros when it is uniform and
    wholly outside, else lane by lane."""
    g = isa.lanes
    _offset(c, q)
    c.get("col0").emit("i32.add").set("first")
    c.get("first").emit("i32.const", 0).emit("i32.ge_s")
    c.get("first").emit("i32.const", g).emit("i32.add").get("w").emit("i32.le_s")
    c.emit("i32.and").get("uniform").emit("i32.and")
    with c.if_():
        c.get(row, "first").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        isa.load(c)
        c.set(target)
        c.emit("else")
        c.get("first").emit("i32.const", g).emit("i32.add").emit("i32.const", 0)
        c.emit("i32.le_s").get("first", "w").emit("i32.ge_s").emit("i32.or")
        c.get("uniform").emit("i32.and")
        with c.if_():
            isa.const(c, 0.0)
            c.set(target)
            c.emit("else")
            _lane_by_lane(c, isa, row, q, target)


def _lane_by_lane(c: Code, isa: Isa, row: str, q: int, target: int) -> None:
    """``target`` lane by lane: column ``col_l + q dil`` of the row at ``row``, zero outside
    ``[0, w)``."""
    for lane in range(isa.lanes):
        _offset(c, q)
        c.get(f"col{lane}").emit("i32.add").set("at")
        c.get(row)
        c.get("at").emit("i32.const", 0).get("at", "w").emit("i32.lt_u").emit("select")
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("f32.load", 2, 0)
        c.emit("f32.const", 0.0).get("at", "w").emit("i32.lt_u").emit("select")
        if isa.vector:
            c.emit("f32x4.splat" if lane == 0 else "f32x4.replace_lane",
                   *(() if lane == 0 else (lane,)))
    c.set(target)


def input_body(c: Code, isa: Isa, spec: KernelSpec) -> None:
    """The input transform (see the module docstring): V as ``f32_winograd[4]_input``'s."""
    m, g = tile(spec.op), isa.lanes
    a, bt = m + 2, TRANSFORMS[m][0]
    locals_(c, "i32", "img", "ch", "i", "j", "kbytes", "xplane", "vbase", "tile", "first",
            "at", "phase", "uniform", "whole", "two", "three", "dst", "r0",
            *(f"col{lane}" for lane in range(g)), *(f"row{r}" for r in range(a)),
            *(f"ok{r}" for r in range(a)))
    t = [[c.local(isa.valtype, f"t{r}_{s}") for s in range(a)] for r in range(a)]
    d = [c.local(isa.valtype, f"d{q}") for q in range(a)]
    out = c.local(isa.valtype, "out")
    c.get("cs", "count").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").set("kbytes")

    def row_of_tiles() -> None:
        _start(c, "i", m, "r0")
        for r in range(a):  # input row r0 - top + r dil: its address, and whether inside
            _offset(c, r)
            c.get("r0").emit("i32.add").get("top").emit("i32.sub").tee("at")
            c.get("h").emit("i32.lt_u").set(f"ok{r}")
            pointer(c, f"row{r}", "xplane", ("at", "w"))
        pointer(c, "tile", "vbase", ("i", "tw"))
        count(c, "j", lambda: c.get("tw"), g, group)

    def group() -> None:
        _lanes(c, isa, m, "left")
        if isa.vector:
            for name, tiles_left in (("two", 2), ("three", 3)):
                c.get("j").emit("i32.const", tiles_left).emit("i32.add").get("tw")
                c.emit("i32.le_u").set(name)
        c.get("j").emit("i32.const", g).emit("i32.add").get("tw").emit("i32.le_u").set("whole")
        for r in range(a):
            c.get(f"ok{r}")
            with c.if_():
                for q in range(a):
                    _load(c, isa, f"row{r}", q, d[q])
                for s, coefficients in enumerate(bt):  # t = B^T d along the columns
                    linear(c, isa, coefficients, d)
                    c.set(t[r][s])
                c.emit("else")
                for s in range(a):
                    isa.const(c, 0.0)
                    c.set(t[r][s])
        store_positions(c, isa, m, bt, t, out, whole=not isa.vector)

    each_plane(c, row_of_tiles)


def output_body(c: Code, isa: Isa, spec: KernelSpec) -> None:
    """The output transform (see the module docstring): M as ``f32_winograd[4]_output``'s,
    plus the bias and the activation."""
    m, g = tile(spec.op), isa.lanes
    a, at = m + 2, TRANSFORMS[m][1]
    locals_(c, "i32", "img", "ch", "i", "j", "kbytes", "mbase", "yplane", "tile", "q", "at",
            "first", "phase", "uniform", "whole", "yrow", "r0", "limit",
            *(f"col{lane}" for lane in range(g)))
    mv = [c.local(isa.valtype, f"m{r}") for r in range(a)]
    u = [[c.local(isa.valtype, f"u{row}_{s}") for s in range(a)] for row in range(m)]
    bias, out = c.local(isa.valtype, "b"), c.local(isa.valtype, "out")
    c.get("os", "count").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").set("kbytes")

    def group() -> None:
        _lanes(c, isa, m, "")
        c.get("j").emit("i32.const", g).emit("i32.add").get("tw").emit("i32.le_u").set("whole")
        pointer(c, "q", "tile", ("j",))
        output_rows(c, isa, at, mv, u, bias)
        # lanes past the row's tiles: their columns count as outside the image
        c.emit("i32.const", g).get("tw", "j").emit("i32.sub").get("whole").emit("select")
        c.set("limit")
        for row in range(m):
            _offset(c, row)
            c.get("r0").emit("i32.add").tee("at").get("oh").emit("i32.lt_u")
            with c.if_():
                pointer(c, "yrow", "yplane", ("at", "ow"))
                for b in range(m):
                    linear(c, isa, at[b], u[row])
                    for op in spec.activations:
                        activations.apply(c, isa, op)
                    c.set(out)
                    _store(c, isa, b, out)

    def _store(c: Code, isa: Isa, b: int, value: int) -> None:
        """Store ``value`` at columns ``col_l + b dil`` of the row at ``yrow``, those inside
        the image and of the row's tiles."""
        _offset(c, b)
        c.get("col0").emit("i32.add").tee("first")
        c.emit("i32.const", isa.lanes).emit("i32.add").get("ow").emit("i32.le_u")
        c.get("uniform").emit("i32.and").get("whole").emit("i32.and")
        with c.if_():
            c.get("yrow", "first").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.get(value)
            isa.store(c)
            c.emit("else")
            if isa.vector:  # lane by lane, unless all the group's columns are past the row
                c.get("first", "ow").emit("i32.lt_s").get("uniform").emit("i32.eqz")
                c.emit("i32.or").emit("i32.eqz").emit("br_if", 0)
                for lane in range(isa.lanes):
                    _offset(c, b)
                    c.get(f"col{lane}").emit("i32.add").tee("at").get("ow").emit("i32.lt_u")
                    c.emit("i32.const", lane).get("limit").emit("i32.lt_u").emit("i32.and")
                    with c.if_():
                        c.get("yrow", "at").emit("i32.const", 2).emit("i32.shl")
                        c.emit("i32.add").get(value).emit("f32x4.extract_lane", lane)
                        c.emit("f32.store", 2, 0)
            else:
                guarded_store(c, isa, value, "yrow", "first", 0, "ow")

    def row_of_tiles() -> None:
        _start(c, "i", m, "r0")
        pointer(c, "tile", "mbase", ("i", "tw"))
        count(c, "j", lambda: c.get("tw"), g, group)

    each_output_plane(c, isa, bias, row_of_tiles)
