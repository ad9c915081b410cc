"""How the dense tiles (``dense_tile``) store a finished register of C: its row's address,
the conv's per-row bias, the bias row and residual R added, the epilogue applied, and at an
edge tile only the columns before ``n``, lane by lane."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import activations
from .isa import Isa

if TYPE_CHECKING:
    from ..wasm import Code
    from .dense_tile import DenseFrame


def row_address(c: Code, base: int, row: int, r: int, stride: int) -> None:
    """Push ``base + (row + r) * stride``."""
    c.emit("local.get", base).emit("local.get", row)
    if r:
        c.emit("i32.const", r).emit("i32.add")
    c.emit("local.get", stride).emit("i32.mul").emit("i32.add")


def _address(f: DenseFrame, base: int, r: int, row: bool) -> None:
    """Push ``base + (i + r) * ldc + j * 4`` (C's or R's row ``i + r`` at column ``j``), or
    ``base + j * 4`` for the bias row."""
    c = f.c
    if row:
        row_address(c, base, f.i, r, f.ldc)
    else:
        c.emit("local.get", base)
    c.emit("local.get", f.j).emit("i32.const", 2).emit("i32.shl").emit("i32.add")


def _row_bias(f: DenseFrame, isa: Isa, r: int) -> None:
    """Add a conv's bias of row ``i + r`` (one per output channel) to every lane of the register
    on the stack."""
    c = f.c
    c.emit("local.get", f.arg["row_bias"]).emit("local.get", f.i).emit("i32.const", 2)
    c.emit("i32.shl").emit("i32.add")
    isa.load_splat(c, 4 * r)
    isa.op(c, "add")


def store(f: DenseFrame, isa: Isa, r: int, offset: int) -> None:
    """Apply the epilogue to the register on the stack and store it at ``offset`` bytes past
    C[i + r, j]."""
    c, arg = f.c, f.arg
    value = c.local(isa.valtype)
    c.emit("local.set", value)
    _address(f, arg["c"], r, row=True)
    c.emit("local.get", value)
    if "row_bias" in arg:
        _row_bias(f, isa, r)
    for name, row in (("bias", False), ("r", True)):
        if name in arg:
            _address(f, arg[name], r, row)
            isa.load(c, offset)
            isa.op(c, "add")
    for op in f.epilogue:
        activations.apply(c, isa, op)
    isa.store(c, offset)


def store_columns(f: DenseFrame, isa: Isa, r: int, registers: list[int], width: int) -> None:
    """Store row ``r`` of an edge tile, the columns before ``n`` only: each register through
    the epilogue as the other tiles' stores do (the lanes of a bias or R past ``n`` are not
    read, zero), then lane by lane. NOTE: the epilogue once per column (in a scalar register)
    made ``f32_conv2d_gemm`` with a silu or an add and relu 30-40% longer, past the size where
    cranelift kept the instance's context in a register in its tiles' loops (one more load
    before every load of the tile otherwise: ``bench/tile_code.py``)."""
    c, arg = f.c, f.arg
    lanes = isa.lanes

    def before_n(column: int) -> None:
        c.emit("local.get", arg["n"]).emit("local.get", f.j).emit("i32.sub")
        c.emit("i32.const", column).emit("i32.gt_u")

    for v, register in enumerate(registers):
        value = c.local(isa.valtype)
        c.emit("local.get", register)
        if "row_bias" in arg:
            _row_bias(f, isa, r)
        for name, row in (("bias", False), ("r", True)):
            if name not in arg:
                continue
            lanes_of = c.local(isa.valtype)
            isa.const(c, 0.0)
            c.emit("local.set", lanes_of)
            for lane in range(lanes):
                column = v * lanes + lane
                before_n(column)
                c.emit("if")
                _address(f, arg[name], r, row)
                c.emit("f32.load", 2, 4 * column)
                if isa.vector:
                    loaded = c.local("f32")
                    c.emit("local.set", loaded).emit("local.get", lanes_of)
                    c.emit("local.get", loaded).emit("f32x4.replace_lane", lane)
                c.emit("local.set", lanes_of)
                c.emit("end")
            c.emit("local.get", lanes_of)
            isa.op(c, "add")
        for op in f.epilogue:
            activations.apply(c, isa, op)
        c.emit("local.set", value)
        for lane in range(lanes):
            column = v * lanes + lane
            before_n(column)
            c.emit("if")
            _address(f, arg["c"], r, row=True)
            c.emit("local.get", value)
            if isa.vector:
                c.emit("f32x4.extract_lane", lane)
            c.emit("f32.store", 2, 4 * column)
            c.emit("end")
