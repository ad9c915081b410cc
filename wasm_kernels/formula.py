"""The ABI's elementwise formulas as code: one small expression language, evaluated over any
number type (numpy arrays on the host, ``templates.expr.Expr`` in the wasm kernels).

A formula is a Python expression over the row's variables (``x``, or ``a`` and ``b``) and
numbers, with ``+ - * /``, unary ``-``, one comparison (``== != < <= > >=``) and calls of
the functions in ``FUNCTIONS``. Each evaluator supplies its own implementation of those
functions; calls whose arguments are all numbers are folded with ``math``, so
``sqrt(2)`` costs nothing at run time.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

FUNCTIONS: dict[str, Callable[..., float]] = {
    "max": max, "min": min, "abs": abs, "sqrt": math.sqrt, "exp": math.exp, "log": math.log,
    "tanh": math.tanh, "erf": math.erf, "erfc": math.erfc, "floor": math.floor,
    "ceil": math.ceil, "round": round, "sin": math.sin, "cos": math.cos,
}
"""The functions a formula may call, with their meaning on plain numbers."""

_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.USub: operator.neg, ast.Eq: operator.eq,
    ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


@functools.cache
def parse(formula: str) -> ast.expr:
    """The syntax tree of ``formula``, checked against the language.

    Raises:
        ValueError: ``formula`` does not parse, or uses syntax or a function outside the
            language; the message names the offending part.
    """
    try:
        tree = ast.parse(formula, mode="eval").body
    except SyntaxError as error:
        raise ValueError(f"formula {formula!r} does not parse: {error.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise ValueError(f"formula {formula!r} calls {ast.unparse(node.func)!r}; "
                                 f"available: {sorted(FUNCTIONS)}")
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise ValueError(f"formula {formula!r} holds {node.value!r}; constants are numbers")
        elif isinstance(node, ast.Compare) and len(node.ops) != 1:
            raise ValueError(f"formula {formula!r} chains comparisons")
        elif not isinstance(node, (ast.Call, ast.Compare, ast.BinOp, ast.UnaryOp, ast.Name,
                                   ast.Constant, ast.Load, *_OPERATORS)):
            raise ValueError(f"formula {formula!r} uses {ast.unparse(node)!r}, which is "
                             "outside the formula language")
    return tree


def evaluate(formula: str, variables: Mapping[str, Any],
             functions: Mapping[str, Callable[..., Any]]) -> Any:
    """``formula`` with ``variables`` bound and its calls made to ``functions``.

    Raises:
        ValueError: as ``parse``; or the formula names a variable not in ``variables``, or
            calls a function ``functions`` does not implement.
    """
    def visit(node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            assert isinstance(node.value, (int, float))
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in variables:
                raise ValueError(f"formula {formula!r} reads {node.id!r}; bound: "
                                 f"{sorted(variables)}")
            return variables[node.id]
        if isinstance(node, ast.UnaryOp):
            return _OPERATORS[type(node.op)](visit(node.operand))
        if isinstance(node, ast.BinOp):
            return _OPERATORS[type(node.op)](visit(node.left), visit(node.right))
        if isinstance(node, ast.Compare):
            return _OPERATORS[type(node.ops[0])](visit(node.left), visit(node.comparators[0]))
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        args = [visit(arg) for arg in node.args]
        if all(isinstance(arg, float) for arg in args):
            return float(FUNCTIONS[node.func.id](*args))
        if node.func.id not in functions:
            raise ValueError(f"formula {formula!r} calls {node.func.id!r}, which this "
                             f"evaluator lacks; it has {sorted(functions)}")
        return functions[node.func.id](*args)

    return visit(parse(formula))
