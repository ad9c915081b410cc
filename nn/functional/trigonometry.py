"""Trigonometric and hyperbolic composites: ``tan``, ``atan``, ``asin``, ``acos``, ``sinh``,
``cosh``, ``asinh``, ``acosh``, ``atanh``, written in ``sin``, ``cos``, ``exp``, ``log``,
``sqrt`` and arithmetic (no kernel of their own)."""

from __future__ import annotations

import math

import numpy as np

from .elementwise import abs, add, div, exp, gt, log, lt, mul, neg, sqrt, sub, where
from .rounding import cos, sin

__all__ = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "tan"]

_ATAN = (-0.3333314528, 0.1999355085, -0.1420889944, 0.1065626393, -0.0752896400,
         0.0429096138, -0.0161657367, 0.0028662257)
"""``atan(t) / t - 1`` on [0, 1] as a polynomial in t**2 (Abramowitz and Stegun 4.4.49,
absolute error below 2e-8)."""


def tan(input: np.ndarray) -> np.ndarray:
    """``sin / cos``.

    >>> round(float(tan(np.array([0.5], np.float32))[0]), 5)
    0.5463
    """
    return div(sin(input), cos(input))


def atan(input: np.ndarray) -> np.ndarray:
    """The arctangent, in (-pi/2, pi/2): a polynomial on [0, 1], reflected as
    ``pi/2 - atan(1 / t)`` above 1, with the sign of ``input``.

    >>> round(float(atan(np.array([2.0], np.float32))[0]), 5)
    1.10715
    """
    t = abs(input)
    outside = gt(t, 1.0)
    u = where(outside, div(1.0, t), t)
    square = mul(u, u)
    poly = mul(square, _ATAN[-1])
    for coefficient in reversed(_ATAN[:-1]):
        poly = mul(add(poly, coefficient), square)
    inner = mul(add(poly, 1.0), u)
    angle = where(outside, sub(math.pi / 2, inner), inner)
    return where(lt(input, 0.0), neg(angle), angle)


def asin(input: np.ndarray) -> np.ndarray:
    """``atan(x / sqrt((1 - x) (1 + x)))``: +-pi/2 at +-1, NaN beyond.

    >>> round(float(asin(np.array([0.5], np.float32))[0]), 5)
    0.5236
    """
    return atan(div(input, sqrt(mul(sub(1.0, input), add(input, 1.0)))))


def acos(input: np.ndarray) -> np.ndarray:
    """``2 atan(sqrt((1 - x) / (1 + x)))``, accurate near 1: pi at -1, NaN beyond +-1.

    >>> round(float(acos(np.array([0.5], np.float32))[0]), 5)
    1.0472
    """
    return mul(atan(sqrt(div(sub(1.0, input), add(input, 1.0)))), 2.0)


def sinh(input: np.ndarray) -> np.ndarray:
    """``(exp(x) - exp(-x)) / 2``.

    >>> round(float(sinh(np.array([1.0], np.float32))[0]), 5)
    1.1752
    """
    return mul(sub(exp(input), exp(neg(input))), 0.5)


def cosh(input: np.ndarray) -> np.ndarray:
    """``(exp(x) + exp(-x)) / 2``.

    >>> round(float(cosh(np.array([1.0], np.float32))[0]), 5)
    1.54308
    """
    return mul(add(exp(input), exp(neg(input))), 0.5)


def asinh(input: np.ndarray) -> np.ndarray:
    """``log(|x| + sqrt(x^2 + 1))`` with the sign of ``x`` (no cancellation below 0).

    >>> round(float(asinh(np.array([-1.0], np.float32))[0]), 5)
    -0.88137
    """
    t = abs(input)
    magnitude = log(add(t, sqrt(add(mul(t, t), 1.0))))
    return where(lt(input, 0.0), neg(magnitude), magnitude)


def acosh(input: np.ndarray) -> np.ndarray:
    """``log(x + sqrt((x - 1) (x + 1)))``: NaN below 1.

    >>> round(float(acosh(np.array([2.0], np.float32))[0]), 5)
    1.31696
    """
    return log(add(input, sqrt(mul(sub(input, 1.0), add(input, 1.0)))))


def atanh(input: np.ndarray) -> np.ndarray:
    """``log((1 + x) / (1 - x)) / 2``: +-inf at +-1, NaN beyond.

    >>> round(float(atanh(np.array([0.5], np.float32))[0]), 5)
    0.54931
    """
    return mul(log(div(add(input, 1.0), sub(1.0, input))), 0.5)
