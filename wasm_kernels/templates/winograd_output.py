"""``f32_winograd[4]_output[_add][_<activation>]``: ``A^T m A`` of every tile, plus the bias,
the residual and the activation, written into the image (NCHW); F(m x m, 3x3), m = 2 or 4.

Per channel and row of tiles, ``lanes`` adjacent tiles at a time: the (m + 2)^2 products of
each are loaded from their planes of M, the bias joins ``m(1, 1)`` (column 1 of ``A^T`` is
all ones, so ``A^T`` adds it to every output of a tile), ``A^T`` along the rows then the
columns gives the outputs ``y(a, b)`` of the tiles' row ``m i + a`` and column ``m j + b``,
and shuffles put each row's outputs in column order (m = 2: ``y(a, 0)`` and ``y(a, 1)``
interleaved; m = 4: a 4x4 transpose, one register per tile). Residual and activation apply
to those registers before they are stored; a group that passes the image's last column or
row stores (and reads the residual) lane by lane, only inside the image.
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
    guarded_lanes,
    guarded_store,
    linear,
    locals_,
    output_rows,
    pointer,
    shuffle,
)


def body(c: Code, isa: Isa, spec: KernelSpec) -> None:
    """The kernel's body (see the module docstring)."""
    m, g, residual = tile(spec.op), isa.lanes, "add" in spec.epilogue
    a, at = m + 2, TRANSFORMS[tile(spec.op)][1]
    locals_(c, "i32", "img", "ch", "i", "j", "kbytes", "mbase", "yplane", "rplane", "tile",
            "col", "at", "q", "yrow", "rrow")
    mv = [c.local(isa.valtype, f"m{r}") for r in range(a)]
    u = [[c.local(isa.valtype, f"u{row}_{s}") for s in range(a)] for row in range(m)]
    y = [[c.local(isa.valtype, f"y{row}_{b}") for b in range(m)] for row in range(m)]
    bias, out = c.local(isa.valtype, "b"), c.local(isa.valtype, "out")
    if isa.vector:
        locals_(c, "v128", "s0", "s1", "s2", "s3")
    c.get("os", "count").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").set("kbytes")

    def group() -> None:
        c.get("j").emit("i32.const", m).emit("i32.mul").set("col")
        pointer(c, "q", "tile", ("j",))
        output_rows(c, isa, at, mv, u, bias)
        for row in range(m):  # y(row, b) = (A^T m) A
            for b in range(m):
                linear(c, isa, at[b], u[row])
                c.set(y[row][b])
        # fast: g whole tiles inside the image's columns and rows
        c.get("col").emit("i32.const", g * m).emit("i32.add").get("ow").emit("i32.le_u")
        c.get("i").emit("i32.const", 1).emit("i32.add").emit("i32.const", m).emit("i32.mul")
        c.get("oh").emit("i32.le_u").emit("i32.and")
        with c.if_():
            for row in range(m):
                _row(c, isa, spec, y[row], out, row, fast=True)
            c.emit("else")
            for row in range(m):
                c.get("i").emit("i32.const", m).emit("i32.mul").emit("i32.const", row)
                c.emit("i32.add").get("oh").emit("i32.lt_u")
                with c.if_():
                    _row(c, isa, spec, y[row], out, row, fast=False)

    def row_of_tiles() -> None:
        pointer(c, "tile", "mbase", ("i", "tw"))
        count(c, "j", lambda: c.get("tw"), g, group)

    each_output_plane(c, isa, bias, row_of_tiles, residual)


def _registers(c: Code, isa: Isa, y: list[int]) -> list[tuple[int | None, int]]:
    """The registers of one output row in column order, each as (local, its first column
    after ``col``): a local of ``y`` as is, or None for one left on the stack by the
    shuffles (which run when its turn comes: see ``_row``)."""
    if not isa.vector:
        return [(value, b) for b, value in enumerate(y)]
    return [(None, 4 * k) for k in range(len(y))]


def _push(c: Code, isa: Isa, y: list[int], k: int) -> None:
    """Push register ``k`` of an output row from its ``y`` (vector ISAs)."""
    if len(y) == 2:  # (a0, b0, a1, b1), (a2, b2, a3, b3)
        shuffle(c, y[0], y[1], (0, 4, 1, 5) if k == 0 else (2, 6, 3, 7))
        return
    if k == 0:  # a 4x4 transpose: s0, s1 hold lanes 0, 1; s2, s3 lanes 2, 3
        for name, (x, z, lanes) in zip(("s0", "s1", "s2", "s3"), (
                (y[0], y[1], (0, 4, 1, 5)), (y[2], y[3], (0, 4, 1, 5)),
                (y[0], y[1], (2, 6, 3, 7)), (y[2], y[3], (2, 6, 3, 7)))):
            shuffle(c, x, z, lanes)
            c.set(name)
    pair = ("s0", "s1") if k < 2 else ("s2", "s3")
    shuffle(c, *pair, (0, 1, 4, 5) if k % 2 == 0 else (2, 3, 6, 7))


def _row(c: Code, isa: Isa, spec: KernelSpec, y: list[int], out: int, row: int,
         fast: bool) -> None:
    """Store output row ``m i + row`` of the group from its outputs ``y``."""
    m = len(y)
    residual = "add" in spec.epilogue
    pointer(c, "yrow", "yplane", ("i", m, "ow"), *((("ow", row),) if row else ()))
    if residual:
        pointer(c, "rrow", "rplane", ("i", m, "ow"), *((("ow", row),) if row else ()))
    for k, (value, first) in enumerate(_registers(c, isa, y)):
        if value is None:
            _push(c, isa, y, k)
        else:
            c.get(value)
        c.set(out)
        if residual:
            c.get(out)
            if fast:
                c.get("rrow", "col").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
                isa.load(c, 4 * first)
            else:
                guarded_lanes(c, isa, "rrow", "col", first, 1, "ow")
            isa.op(c, "add")
            c.set(out)
        for op in spec.activations:
            c.get(out)
            activations.apply(c, isa, op)
            c.set(out)
        if fast:
            c.get("yrow", "col").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.get(out)
            isa.store(c, 4 * first)
        else:
            guarded_store(c, isa, out, "yrow", "col", first, "ow")
