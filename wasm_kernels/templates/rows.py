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
    the fold of its results take one pass. An ``add`` runs in blocks (``_blocked_sum``), so
    its rounding error grows with the block length, not the row length."""
    i = c.local("i32")
    c.emit("i32.const", 0).emit("local.set", i)

    def body(acc: int, each: Isa) -> None:
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

    if combine == "add":
        _blocked_sum(c, isa, i, n, partial(body, each=isa))
    else:
        accs = [c.local(isa.valtype) for _ in range(MAX_CHAINS if isa.vector else 1)]
        for acc in accs:
            isa.const(c, float("-inf"))
            c.emit("local.set", acc)
        if len(accs) > 1:
            _chains(c, isa, i, n, [partial(body, acc, isa) for acc in accs])
        strided_loop(c, i, isa.lanes, n, partial(body, accs[0], isa))
        for acc in accs[1:]:
            c.emit("local.get", accs[0]).emit("local.get", acc)
            isa.op(c, combine)
            c.emit("local.set", accs[0])
        _horizontal(c, isa, accs[0], combine)
    if isa.vector:  # the scalar tail, from the fold so far
        tail = c.local("f32")
        c.emit("local.set", tail)
        strided_loop(c, i, 1, n, partial(body, tail, ISAS["scalar"]))
        c.emit("local.get", tail)


MAX_CHAINS = 4
"""Registers a vector ``max`` or ``pmax`` fold keeps in flight: cranelift's ``f32x4.max`` is
six dependent instructions, so one register is a chain of six per load. A ``max`` is the same
in any order, NaN included; a ``pmax`` (softmax's) may skip a NaN in another place, and the
softmax's exp pass meets that NaN anyway."""


def _chains(c: Code, isa: Isa, i: int, n: int, bodies: list[Callable[[], None]]) -> None:
    """While a register for each of ``bodies`` fits before ``n``: each body on the next."""
    with c.loop():
        c.emit("local.get", i).emit("i32.const", isa.lanes * len(bodies)).emit("i32.add")
        c.emit("local.get", n).emit("i32.gt_u").emit("br_if", 1)
        for body in bodies:
            body()
            c.emit("local.get", i).emit("i32.const", isa.lanes).emit("i32.add")
            c.emit("local.set", i)


BLOCK_STEPS = 64
"""Registers summed per block of an ``add`` fold (256 floats on SIMD, 64 on scalar)."""


def _blocked_sum(c: Code, isa: Isa, i: int, n: int, body: Callable[[int], None]) -> None:
    """Push the f32 sum of the registers from ``i`` while a whole one fits in ``n``: each
    block of ``BLOCK_STEPS`` registers is summed by ``body(block)`` into a register, whose
    lanes are then added into the total with Kahan's compensation.

    NOTE: the total and its compensation live in i32 locals (the f32 bits), so they take
    general registers: as f32 or v128 locals they pushed the block's accumulator out of the
    vector registers the exp of softmax needs, onto the stack (measured: 5-8% slower)."""
    block, end, total, compensation = c.local(isa.valtype), c.local("i32"), c.local("i32"), \
        c.local("i32")
    addend, twin = c.local("f32"), c.local("f32")
    c.emit("i32.const", 0).emit("local.tee", total).emit("local.set", compensation)
    c.emit("block").emit("loop")
    c.emit("local.get", i).emit("i32.const", isa.lanes).emit("i32.add")
    c.emit("local.get", n).emit("i32.gt_u").emit("br_if", 1)
    # end = min(i + BLOCK_STEPS * lanes, n); block = the sum of the registers up to end
    c.emit("local.get", i).emit("i32.const", BLOCK_STEPS * isa.lanes).emit("i32.add")
    c.emit("local.tee", end).emit("local.get", n).emit("local.get", end)
    c.emit("local.get", n).emit("i32.lt_u").emit("select").emit("local.set", end)
    isa.const(c, 0.0)
    c.emit("local.set", block)
    strided_loop(c, i, isa.lanes, end, lambda: body(block))
    # addend = lanes - compensation; twin = total + addend;
    # compensation = (twin - total) - addend if twin is finite else 0 (an infinite total
    # stays infinite, or turns NaN, as a plain sum does); total = twin
    _horizontal(c, isa, block, "add")
    c.emit("local.get", compensation).emit("f32.reinterpret_i32").emit("f32.sub")
    c.emit("local.tee", addend).emit("local.get", total).emit("f32.reinterpret_i32")
    c.emit("f32.add").emit("local.tee", twin)
    c.emit("local.get", total).emit("f32.reinterpret_i32").emit("f32.sub")
    c.emit("local.get", addend).emit("f32.sub").emit("f32.const", 0.0)
    c.emit("local.get", twin).emit("f32.abs").emit("f32.const", float("inf")).emit("f32.lt")
    c.emit("select").emit("i32.reinterpret_f32").emit("local.set", compensation)
    c.emit("local.get", twin).emit("i32.reinterpret_f32").emit("local.set", total)
    c.emit("br", 0).emit("end").emit("end")
    c.emit("local.get", total).emit("f32.reinterpret_i32")
    c.emit("local.get", compensation).emit("f32.reinterpret_i32").emit("f32.sub")


def _horizontal(c: Code, isa: Isa, register: int, combine: str) -> None:
    """Push the fold of the lanes of local ``register`` (itself for the scalar ISA)."""
    c.emit("local.get", register)
    for lane in range(isa.lanes if isa.vector else 0):
        if lane:
            c.emit("local.get", register)
        c.emit("f32x4.extract_lane", lane)
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
