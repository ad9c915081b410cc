"""``f32_winograd_output[_add][_<activation>]``: ``A^T m A`` of every tile, plus the bias,
the residual and the activation, written into the image (NCHW).

Per channel and row of tiles, ``lanes`` adjacent tiles at a time: the 16 products of each
are loaded from their planes of M, the bias joins ``m(1, 1)`` (``A^T`` adds it to all four
outputs of a tile), ``A^T`` along the rows then the columns gives the outputs ``y(a, b)``
of the tiles' row ``2 i + a`` and column ``2 j + b``, and ``y(a, 0)``, ``y(a, 1)`` are
interleaved by shuffles into the 2 * lanes adjacent outputs of that row. Residual and
activation apply to those registers before they are stored; a group that passes the
image's last column stores (and reads the residual) lane by lane, and an odd last row of
tiles stores only its first row.
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code
from . import activations
from .isa import Isa
from .winograd import combine, count, guarded_lanes, guarded_store, locals_, pointer

SUMS = ((0, "add", 1, "add", 2), (1, "sub", 2, "sub", 3))
"""``A^T m`` along one axis: output position -> (first, op, second, op, third)."""
LOW = bytes(4 * lane + byte for lane in (0, 4, 1, 5) for byte in range(4))
HIGH = bytes(4 * lane + byte for lane in (2, 6, 3, 7) for byte in range(4))
"""Shuffles interleaving two registers' lanes: (a0, b0, a1, b1) and (a2, b2, a3, b3)."""


def body(c: Code, isa: Isa, spec: KernelSpec) -> None:
    """The kernel's body (see the module docstring)."""
    g, residual = isa.lanes, "add" in spec.epilogue
    locals_(c, "i32", "img", "ch", "i", "j", "kbytes", "mbase", "yplane", "rplane",
            "tile", "col", "at", "yrow", "rrow", "last")
    m = [c.local(isa.valtype, f"m{k}") for k in range(4)]
    u = [[c.local(isa.valtype, f"u{a}{s}") for s in range(4)] for a in range(2)]
    y = [c.local(isa.valtype, f"y{k}") for k in range(2)]
    bias, out = c.local(isa.valtype, "b"), c.local(isa.valtype, "out")
    c.get("os", "count").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").set("kbytes")

    def group() -> None:
        c.get("j").emit("i32.const", 1).emit("i32.shl").set("col")
        pointer(c, "at", "tile", ("j",))
        for s in range(4):  # u(a, s) = A^T m along the rows, the bias in m(1, 1)
            for r in range(4):
                c.get("at", "kbytes").emit("i32.const", 4 * r + s).emit("i32.mul")
                c.emit("i32.add")
                isa.load(c)
                if (r, s) == (1, 1):
                    c.get(bias)
                    isa.op(c, "add")
                c.set(m[r])
            for a, (p, op1, q, op2, r3) in enumerate(SUMS):
                combine(c, isa, m, (p, op1, q))
                c.get(m[r3])
                isa.op(c, op2)
                c.set(u[a][s])
        for a in range(2):  # y(a, b) = (A^T m) A; row 2 i + 1 only when inside
            if a:
                c.get("i").emit("i32.const", 1).emit("i32.shl").emit("i32.const", 1)
                c.emit("i32.add").get("oh").emit("i32.lt_u")
                c.emit("if")
            for b, (p, op1, q, op2, r3) in enumerate(SUMS):
                combine(c, isa, u[a], (p, op1, q))
                c.get(u[a][r3])
                isa.op(c, op2)
                c.set(y[b])
            _row(c, isa, spec, y, out, a, residual)
            if a:
                c.emit("end")

    def row_of_tiles() -> None:
        pointer(c, "tile", "mbase", ("i", "tw"))
        count(c, "j", lambda: c.get("tw"), g, group)

    def channel() -> None:
        pointer(c, "mbase", "m", ("ch", "count"), ("img", "th", "tw"))
        pointer(c, "yplane", "y", ("img", "os", "oh", "ow"), ("ch", "oh", "ow"))
        if residual:
            pointer(c, "rplane", "r", ("img", "os", "oh", "ow"), ("ch", "oh", "ow"))
        c.get("bias", "ch").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        isa.load_splat(c)
        c.set(bias)
        count(c, "i", lambda: c.get("th"), 1, row_of_tiles)

    count(c, "img", lambda: c.get("n"), 1, lambda: count(c, "ch", lambda: c.get("o"), 1,
                                                         channel))


def _row(c: Code, isa: Isa, spec: KernelSpec, y: list[int], out: int, a: int,
         residual: bool) -> None:
    """Store output row ``2 i + a`` of the group from ``y(a, 0)``, ``y(a, 1)`` (in ``y``)."""
    g = isa.lanes
    pointer(c, "yrow", "yplane", ("i", 2, "ow"), *((("ow",),) if a else ()))
    if residual:
        pointer(c, "rrow", "rplane", ("i", 2, "ow"), *((("ow",),) if a else ()))
    # the registers of the row: (a0, b0, a1, b1), (a2, b2, a3, b3), or one output each
    parts = ([(y[0], y[1], LOW), (y[0], y[1], HIGH)] if isa.vector
             else [(y[0], None, None), (y[1], None, None)])
    c.get("col").emit("i32.const", 2 * g).emit("i32.add").get("ow").emit("i32.le_u")
    c.set("last")
    for k, (first, second, lanes) in enumerate(parts):
        c.get(first)
        if second is not None:
            c.get(second).emit("i8x16.shuffle", lanes)
        c.set(out)
        c.get("last")
        with c.if_():
            if residual:
                c.get(out, "rrow", "col").emit("i32.const", 2).emit("i32.shl")
                c.emit("i32.add")
                isa.load(c, 4 * g * k)
                isa.op(c, "add")
                c.set(out)
            _activate(c, isa, spec, out)
            c.get("yrow", "col").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.get(out)
            isa.store(c, 4 * g * k)
            c.emit("else")
            if residual:
                c.get(out)
                guarded_lanes(c, isa, "rrow", "col", g * k, 1, "ow")
                isa.op(c, "add")
                c.set(out)
            _activate(c, isa, spec, out)
            guarded_store(c, isa, out, "yrow", "col", g * k, "ow")


def _activate(c: Code, isa: Isa, spec: KernelSpec, value: int) -> None:
    """``value = activation(value)`` when the row has one."""
    for op in spec.activations:
        c.get(value)
        activations.apply(c, isa, op)
        c.set(value)
