"""The depthwise family's plane copy: an input plane's rows copied into their place in the
scratch plane (whose zero border is the padding), by one ``memory.copy`` a row when rows are
wide, by registers when narrow; the quantized rows dequantize on the way (``depthwise_quant``).
"""

from __future__ import annotations

from collections.abc import Callable

from . import depthwise_quant
from .depthwise_tile import Frame
from .isa import ISAS, Isa
from .loops import strided_loop

COPY_CALL = 32
"""Rows of at least this many floats are copied into the scratch plane by one
``memory.copy`` (a runtime call, ~the cost of copying 32 floats by registers at opt level
none), narrower ones by registers."""

COPY_UNROLL = 4
"""Registers per iteration of the register copy (each costs an address and a loop test at
opt level none)."""


def copy_rows(f: Frame, first: Callable[[], object]) -> None:
    """Copy input rows ``first()`` .. ``rend`` - 1 of the plane at ``xplane`` into their
    place in the scratch plane."""
    first()
    f.set("r")
    # src = xplane + r * row; dst = scratch + (ph + r) * prow + pw * 4
    f.get("xplane", "r", "row").emit("i32.mul").emit("i32.add")
    f.set("src")
    f.get("scratch", "ph", "r").emit("i32.add").emit("local.get", f.v["prow"])
    f.c.emit("i32.mul").emit("i32.add")
    f.get("pw").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    f.set("dst")

    def copy_row() -> None:
        _copy_row(f)
        f.add("dst", "prow")
        f.add("src", "row")

    strided_loop(f.c, f.v["r"], 1, f.v["rend"], copy_row)


def _copy_row(f: Frame) -> None:
    """Copy the ``w`` floats at ``src`` to ``dst``: one ``memory.copy`` for a row of at least
    ``COPY_CALL`` floats, else whole registers, the last one moved left to end at ``w``
    (rows of 1 to 4 registers: straight-line registers at 0, ``lanes``, ``mid`` and
    ``tail``, where they exist; a row narrower than a register goes float by float); a
    quantized row dequantizes its ``w`` bytes by registers at any width. NOTE:
    ``memory.copy`` is a runtime call: one per row cost more than a 14x14 plane's conv, and
    a loop's control per register as much as the register's copy at 7 floats a row."""
    c, isa, quant = f.c, f.isa, f.quant
    scalar = ISAS["scalar"]
    if quant is None:
        f.get("w").emit("i32.const", COPY_CALL).emit("i32.ge_u").emit("if")
        f.get("dst", "src", "row").emit("memory.copy")
        c.emit("else")

    def move(register: Isa, column: str | None, count: int = 1) -> None:
        if column is None:
            f.get("dst")
        else:
            f.get("dst", column).emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        f.set("pj")
        if column is None:
            f.get("src")
        else:
            f.get("src", column).emit("i32.const", f.shift).emit("i32.shl").emit("i32.add")
        f.set("wi")
        for k in range(count):
            f.get("pj", "wi")
            if quant is None:
                register.load(c, 4 * register.lanes * k)
            else:
                depthwise_quant.load(quant, register, register.lanes * k)
            register.store(c, 4 * register.lanes * k)

    if isa.vector:
        # lanes <= w <= 2 lanes: registers at 0 and tail; <= 4 lanes: 0, lanes, mid, tail
        f.get("tail").emit("i32.const", isa.lanes).emit("i32.le_u").emit("if")
        move(isa, None)
        move(isa, "tail")
        c.emit("else")
        f.get("tail").emit("i32.const", 3 * isa.lanes).emit("i32.le_u").emit("if")
        move(isa, None, 2)
        move(isa, "mid")
        move(isa, "tail")
        c.emit("else")

    f.count("j", "w", COPY_UNROLL * isa.lanes, lambda: move(isa, "j", COPY_UNROLL))
    strided_loop(c, f.v["j"], isa.lanes, f.arg["w"], lambda: move(isa, "j"))
    if isa.vector:
        f.get("w").emit("i32.const", isa.lanes).emit("i32.lt_u").emit("if")
        f.count("j", "w", 1, lambda: move(scalar, "j"))
        c.emit("else")
        f.get("j", "w").emit("i32.lt_u").emit("if")
        f.get("w").emit("i32.const", isa.lanes).emit("i32.sub")
        f.set("j")
        move(isa, "j")
        c.emit("end").emit("end")
        c.emit("end").emit("end")
    if quant is None:
        c.emit("end")
