"""Elementwise functions by name, as expressions: the ops of the unary family and the fused
epilogues of gemm. Each row maps ``x`` to ``f(x)``; ``apply`` emits one on the register on
top of the stack, for the vector and the scalar ISA alike."""

from __future__ import annotations

from collections.abc import Callable

from ..abi import KernelSpec
from ..wasm import Code
from . import expr, vmath
from .expr import Expr
from .isa import Isa

ACTIVATIONS: dict[str, Callable[[Expr], Expr]] = {
    "relu": lambda x: x.max(0.0),
    "relu6": lambda x: x.max(0.0).min(6.0),
    "neg": lambda x: -x,
    "abs": lambda x: x.abs(),
    "sqrt": lambda x: x.sqrt(),
    "floor": lambda x: x.floor(),
    "ceil": lambda x: x.ceil(),
    "round": lambda x: x.nearest(),
    **vmath.FUNCTIONS,
}


def epilogue_of(spec: KernelSpec) -> tuple[str, ...]:
    """The activations named in ``spec.name`` after the op, in order of application."""
    return tuple(part for part in spec.name.split("_")[2:] if part in ACTIVATIONS)


def apply(c: Code, isa: Isa, op: str) -> None:
    """Replace the register on top of the stack by ``op(register)``."""
    value = c.local(isa.valtype)
    c.emit("local.set", value)
    expr.emit(c, isa, ACTIVATIONS[op](Expr.input(0)), {0: value})
