"""Elementwise functions as expressions (``Expr -> Expr``), derived from the ABI's formulas:
the ops of the unary family, the fused epilogues of gemm, linear and conv, and the binary
family's operations.

A formula is evaluated on ``Expr`` through ``formula.evaluate`` with ``EXPR_FUNCTIONS``;
an op with a tuned implementation in ``vmath.FUNCTIONS`` (a cheaper or more accurate
evaluation of the same formula, with its error bound in ``vmath.MAX_ERROR``) uses that.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import formula
from ..abi import UNARY_OPS
from ..wasm import Code
from . import expr, vmath
from .expr import Expr, as_expr
from .isa import Isa

EXPR_FUNCTIONS: dict[str, Callable[..., Expr]] = {
    "max": lambda a, b: as_expr(a).max(b), "min": lambda a, b: as_expr(a).min(b),
    "abs": lambda a: a.abs(), "sqrt": lambda a: a.sqrt(), "exp": vmath.exp, "log": vmath.log,
    "tanh": vmath.tanh, "erf": vmath.erf, "floor": lambda a: a.floor(),
    "ceil": lambda a: a.ceil(), "round": lambda a: a.nearest(), "sin": vmath.sin,
    "cos": vmath.cos,
}
"""The formula language's functions on expressions."""


def binary(math: str) -> Callable[[Expr, Expr], Expr]:
    """The formula ``math`` in ``a`` and ``b`` as a function of two expressions."""
    return lambda a, b: formula.evaluate(math, {"a": a, "b": b}, EXPR_FUNCTIONS)


def unary(op: str) -> Callable[[Expr], Expr]:
    """Unary op ``op`` of the ABI as a function of one expression."""
    tuned = vmath.FUNCTIONS.get(op)
    if tuned is not None:
        return tuned
    math = UNARY_OPS[op]
    return lambda x: as_expr(formula.evaluate(math, {"x": x}, EXPR_FUNCTIONS))


def apply(c: Code, isa: Isa, op: str) -> None:
    """Replace the register on top of the stack by ``op(register)``."""
    value = c.local(isa.valtype)
    c.emit("local.set", value)
    expr.emit(c, isa, unary(op)(Expr.input(0)), {0: value})
