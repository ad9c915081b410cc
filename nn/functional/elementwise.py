"""Elementwise primitives: unary math, binary arithmetic with numpy broadcasting, compares.

Binary ops take arrays or Python scalars; a Python scalar never widens an array's dtype
(NEP 50, like torch's "wrapped numbers"). Comparisons return ``bool`` arrays.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._dispatch import primitive

__all__ = ["abs", "add", "cast", "check", "div", "eq", "erf", "exp", "ge", "gt", "le", "log", "lt",
           "maximum", "minimum", "mul", "ne", "neg", "pow", "relu", "rsqrt", "sigmoid",
           "sqrt", "sub", "tanh", "where"]

Operand = np.ndarray | float | int
_erf = np.frompyfunc(math.erf, 1, 1)


@primitive
def exp(input: np.ndarray) -> np.ndarray:
    """``e ** input``.

    >>> exp(np.zeros(2, np.float32)).tolist()
    [1.0, 1.0]
    """
    return np.exp(input)


@primitive
def log(input: np.ndarray) -> np.ndarray:
    """Natural logarithm.

    >>> log(np.ones(2, np.float32)).tolist()
    [0.0, 0.0]
    """
    return np.log(input)


@primitive
def sqrt(input: np.ndarray) -> np.ndarray:
    """Square root.

    >>> sqrt(np.array([4.0], np.float32)).tolist()
    [2.0]
    """
    return np.sqrt(input)


@primitive
def rsqrt(input: np.ndarray) -> np.ndarray:
    """``1 / sqrt(input)``.

    >>> rsqrt(np.array([4.0], np.float32)).tolist()
    [0.5]
    """
    return np.reciprocal(np.sqrt(input))


@primitive
def tanh(input: np.ndarray) -> np.ndarray:
    """Hyperbolic tangent.

    >>> tanh(np.zeros(1, np.float32)).tolist()
    [0.0]
    """
    return np.tanh(input)


@primitive
def erf(input: np.ndarray) -> np.ndarray:
    """The error function, evaluated in float64 and returned in the input's dtype.

    >>> erf(np.zeros(1, np.float32)).tolist()
    [0.0]
    """
    return np.asarray(_erf(np.asarray(input, dtype=np.float64))).astype(input.dtype)


@primitive
def sigmoid(input: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-input))``, without overflow for large ``|input|``.

    >>> sigmoid(np.zeros(1, np.float32)).tolist()
    [0.5]
    """
    e = np.exp(-np.abs(input))
    return np.where(input >= 0, 1 / (1 + e), e / (1 + e)).astype(input.dtype)


@primitive
def abs(input: np.ndarray) -> np.ndarray:
    """Absolute value.

    >>> abs(np.array([-2.0], np.float32)).tolist()
    [2.0]
    """
    return np.abs(input)


@primitive
def neg(input: np.ndarray) -> np.ndarray:
    """``-input``.

    >>> neg(np.array([2.0], np.float32)).tolist()
    [-2.0]
    """
    return np.negative(input)


@primitive
def relu(input: np.ndarray) -> np.ndarray:
    """``max(input, 0)`` elementwise; NaN stays NaN.

    >>> relu(np.array([-1.0, 2.0], np.float32)).tolist()
    [0.0, 2.0]
    """
    return np.maximum(input, np.zeros((), dtype=input.dtype))


@primitive
def cast(input: np.ndarray, dtype: Any) -> np.ndarray:
    """``input`` converted to ``dtype`` (torch's ``Tensor.to(dtype)``).

    >>> cast(np.array([1.5], np.float32), np.int64).tolist()
    [1]
    """
    return np.asarray(input).astype(dtype)


@primitive
def add(input: Operand, other: Operand) -> np.ndarray:
    """``input + other`` with broadcasting.

    >>> add(np.ones(2, np.float32), 1.0).tolist()
    [2.0, 2.0]
    """
    return np.add(input, other)


@primitive
def sub(input: Operand, other: Operand) -> np.ndarray:
    """``input - other`` with broadcasting.

    >>> sub(np.ones(2, np.float32), 1.0).tolist()
    [0.0, 0.0]
    """
    return np.subtract(input, other)


@primitive
def mul(input: Operand, other: Operand) -> np.ndarray:
    """``input * other`` with broadcasting.

    >>> mul(np.ones(2, np.float32), 3.0).tolist()
    [3.0, 3.0]
    """
    return np.multiply(input, other)


@primitive
def div(input: Operand, other: Operand) -> np.ndarray:
    """``input / other`` (true division) with broadcasting.

    >>> div(np.ones(2, np.float32), 4.0).tolist()
    [0.25, 0.25]
    """
    return np.true_divide(input, other)


@primitive
def pow(input: Operand, exponent: Operand) -> np.ndarray:
    """``input ** exponent`` with broadcasting.

    >>> pow(np.array([3.0], np.float32), 2.0).tolist()
    [9.0]
    """
    return np.power(input, exponent)


@primitive
def maximum(input: Operand, other: Operand) -> np.ndarray:
    """Elementwise maximum; NaN propagates.

    >>> maximum(np.array([1.0, 5.0], np.float32), 2.0).tolist()
    [2.0, 5.0]
    """
    return np.maximum(input, other)


@primitive
def minimum(input: Operand, other: Operand) -> np.ndarray:
    """Elementwise minimum; NaN propagates.

    >>> minimum(np.array([1.0, 5.0], np.float32), 2.0).tolist()
    [1.0, 2.0]
    """
    return np.minimum(input, other)


@primitive
def where(condition: np.ndarray, input: Operand, other: Operand) -> np.ndarray:
    """``input`` where ``condition`` is true, else ``other``, with broadcasting.

    >>> where(np.array([True, False]), np.zeros(2, np.float32), 1.0).tolist()
    [0.0, 1.0]
    """
    return np.where(condition, input, other)


@primitive
def eq(input: Operand, other: Operand) -> np.ndarray:
    """``input == other`` as a bool array.

    >>> eq(np.array([1.0, 2.0], np.float32), 2.0).tolist()
    [False, True]
    """
    return np.equal(input, other)


@primitive
def ne(input: Operand, other: Operand) -> np.ndarray:
    """``input != other`` as a bool array.

    >>> ne(np.array([1.0, 2.0], np.float32), 2.0).tolist()
    [True, False]
    """
    return np.not_equal(input, other)


@primitive
def lt(input: Operand, other: Operand) -> np.ndarray:
    """``input < other`` as a bool array.

    >>> lt(np.array([1.0, 2.0], np.float32), 2.0).tolist()
    [True, False]
    """
    return np.less(input, other)


@primitive
def le(input: Operand, other: Operand) -> np.ndarray:
    """``input <= other`` as a bool array.

    >>> le(np.array([1.0, 3.0], np.float32), 2.0).tolist()
    [True, False]
    """
    return np.less_equal(input, other)


@primitive
def gt(input: Operand, other: Operand) -> np.ndarray:
    """``input > other`` as a bool array.

    >>> gt(np.array([1.0, 3.0], np.float32), 2.0).tolist()
    [False, True]
    """
    return np.greater(input, other)


@primitive
def ge(input: Operand, other: Operand) -> np.ndarray:
    """``input >= other`` as a bool array.

    >>> ge(np.array([1.0, 2.0], np.float32), 2.0).tolist()
    [False, True]
    """
    return np.greater_equal(input, other)


@primitive
def check(input: np.ndarray, condition: np.ndarray, expected: bool = True,
          message: str = "check failed") -> np.ndarray:
    """``input``, once ``condition`` (one bool) is ``expected``; otherwise an error. A
    compiled model traps instead (a branch of a run-time ``If`` that cannot run).

    Raises:
        ValueError: ``condition`` is not ``expected``, with ``message``.

    >>> check(np.ones(2, np.float32), np.array(True)).tolist()
    [1.0, 1.0]
    """
    if bool(np.asarray(condition).reshape(-1)[0]) != expected:
        raise ValueError(message)
    return input
