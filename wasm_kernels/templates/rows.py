"""Map and fold over contiguous rows of floats, one register at a time then a scalar tail:
the building blocks of the row-wise (softmax, layer_norm), reduce and binary families.

Element functions are expressions (``expr.Expr``): input ``k < len(sources)`` is the element
of source ``k``; higher inputs are per-row values the caller keeps in locals (``scalars``
maps an input index to a pair of locals: the splatted v128 and the f32).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from ..wasm import Code
from . import expr
from .expr import Expr
from .isa import ISAS, Isa
from .loops import strided_loop

ElementFn = Callable[[list[Expr]], Expr]


def with_tail(isa: Isa) -> tuple[Isa, ...]:
    """The ISA, then the scalar ISA for the tail (just scalar for the scalar variant)."""
    return tuple(dict.fromkeys((isa, ISAS["scalar"])))


def _element_inputs(c: Code, isa: Isa, sources: list[int], i: int,
                    scalars: dict[int, tuple[int, int]]) -> dict[int, int]:
    """Load element ``i`` of every source into a local; map each input to its local."""
    inputs = {}
    for k, base in enumerate(sources):
        c.emit("local.get", base).emit("local.get", i).emit("i32.const", 2).emit("i32.shl")
        c.emit("i32.add")
        isa.load(c)
        inputs[k] = c.local(isa.valtype)
        c.emit("local.set", inputs[k])
    for k, (vector, scalar) in scalars.items():
        inputs[k] = vector if isa.vector else scalar
    return inputs


def row_map(c: Code, isa: Isa, sources: list[int], dst: int, n: int, fn: ElementFn,
            scalars: dict[int, tuple[int, int]] | None = None) -> None:
    """``dst[i] = fn(sources[0][i], ...)`` for ``i < n`` (locals hold the pointers and n)."""
    i = c.local("i32")
    c.emit("i32.const", 0).emit("local.set", i)
    for each in with_tail(isa):
        def body(each: Isa = each) -> None:
            inputs = _element_inputs(c, each, sources, i, scalars or {})
            c.emit("local.get", dst).emit("local.get", i).emit("i32.const", 2)
            c.emit("i32.shl").emit("i32.add")
            expr.emit(c, each, fn([Expr.input(k) for k in range(len(inputs))]), inputs)
            each.store(c)

        strided_loop(c, i, each.lanes, n, body)


def row_fold(c: Code, isa: Isa, sources: list[int], n: int, combine: str, fn: ElementFn,
             scalars: dict[int, tuple[int, int]] | None = None, dst: int | None = None) -> None:
    """Push the f32 ``combine``-fold of ``fn(elements)`` over ``i < n``: ``add``, ``max``, or
    ``pmax``, a max in one instruction instead of six that may skip a NaN element;
    with ``dst`` (a pointer local), also store each ``fn`` value at ``dst[i]``, so a map and
    the fold of its results take one pass.

    An ``add`` over the registers runs in blocks of ``BLOCK_STEPS`` registers, each summed
    on its own and added into the total with Kahan's compensation, so the rounding error
    grows with the block length, not the row length (the scalar tail of a vector ISA holds
    fewer than ``lanes`` elements and is added directly)."""
    identity = 0.0 if combine == "add" else float("-inf")
    i = c.local("i32")
    c.emit("i32.const", 0).emit("local.set", i)
    accumulators = []
    for each in with_tail(isa):
        acc = c.local(each.valtype)
        accumulators.append(acc)
        if each.vector or len(accumulators) == 1:
            each.const(c, identity)
        else:
            _horizontal(c, isa, accumulators[0], combine)
        c.emit("local.set", acc)

        def body(acc: int, each: Isa = each) -> None:
            inputs = _element_inputs(c, each, sources, i, scalars or {})
            value = fn([Expr.input(k) for k in range(len(sources) + len(scalars or {}))])
            if dst is not None:
                inputs[-2] = c.local(each.valtype)
                c.emit("local.get", dst).emit("local.get", i).emit("i32.const", 2)
                c.emit("i32.shl").emit("i32.add")
                expr.emit(c, each, value, inputs)
                c.emit("local.tee", inputs[-2])
                each.store(c)
                value = Expr.input(-2)
            inputs[-1] = acc
            expr.emit(c, each, Expr(combine, (Expr.input(-1), value)), inputs)
            c.emit("local.set", acc)

        if combine == "add" and len(accumulators) == 1:
            _blocked_sum(c, each, i, n, acc, body)
        else:
            strided_loop(c, i, each.lanes, n, partial(body, acc))
    c.emit("local.get", accumulators[-1])


BLOCK_STEPS = 32
"""Registers summed per block of an ``add`` fold (128 floats on SIMD, 32 on scalar)."""


def _blocked_sum(c: Code, isa: Isa, i: int, n: int, total: int,
                 body: Callable[[int], None]) -> None:
    """``total`` += the registers from ``i`` while a whole one fits in ``n``, a block of
    ``BLOCK_STEPS`` registers at a time: the first block straight into ``total`` (a short
    row pays nothing), each later one summed by ``body(block)`` into its own accumulator,
    then added into ``total`` with Kahan's compensation, applied once at the end."""
    block, compensation, twin = (c.local(isa.valtype) for _ in range(3))
    end = c.local("i32")

    def block_end() -> None:
        # end = min(i + BLOCK_STEPS * lanes, n)
        c.emit("local.get", i).emit("i32.const", BLOCK_STEPS * isa.lanes).emit("i32.add")
        c.emit("local.tee", end).emit("local.get", n).emit("local.get", end)
        c.emit("local.get", n).emit("i32.lt_u").emit("select").emit("local.set", end)

    block_end()
    strided_loop(c, i, isa.lanes, end, lambda: body(total))
    isa.const(c, 0.0)
    c.emit("local.set", compensation)
    c.emit("block").emit("loop")
    c.emit("local.get", i).emit("i32.const", isa.lanes).emit("i32.add")
    c.emit("local.get", n).emit("i32.gt_u").emit("br_if", 1)
    block_end()
    isa.const(c, 0.0)
    c.emit("local.set", block)
    strided_loop(c, i, isa.lanes, end, lambda: body(block))
    # block -= compensation; twin = total + block; compensation = (twin - total) - block
    c.emit("local.get", block).emit("local.get", compensation)
    isa.op(c, "sub")
    c.emit("local.tee", block).emit("local.get", total)
    isa.op(c, "add")
    c.emit("local.tee", twin).emit("local.get", total)
    isa.op(c, "sub")
    c.emit("local.get", block)
    isa.op(c, "sub")
    c.emit("local.set", compensation)
    c.emit("local.get", twin).emit("local.set", total)
    c.emit("br", 0).emit("end").emit("end")
    c.emit("local.get", total).emit("local.get", compensation)
    isa.op(c, "sub")
    c.emit("local.set", total)


def _horizontal(c: Code, isa: Isa, vector: int, combine: str) -> None:
    """Push the fold of the lanes of local ``vector``."""
    for lane in range(isa.lanes):
        c.emit("local.get", vector).emit("f32x4.extract_lane", lane)
        if lane:
            c.emit(f"f32.{combine.removeprefix('p')}")


def splat_scalar(c: Code, isa: Isa) -> tuple[int, int]:
    """Store the f32 on the stack as an input for ``scalars``: (splatted register, f32)."""
    scalar = c.local("f32")
    c.emit("local.set", scalar)
    if not isa.vector:
        return scalar, scalar
    vector = c.local("v128")
    c.emit("local.get", scalar).emit("f32x4.splat").emit("local.set", vector)
    return vector, scalar
