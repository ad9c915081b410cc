"""Rounding and periodic elementwise primitives: ``floor``, ``ceil``, ``round`` (SIMD128's
own instructions in the kernels), ``sin`` and ``cos`` (a range-reduced polynomial in the
kernels, accurate to 2e-7 absolute for ``|x| <= 8192``); and the composites ``trunc``,
``sign`` and ``fmod``."""

from __future__ import annotations

import numpy as np

from .._dispatch import primitive
from .elementwise import abs, cast, eq, gt, lt, where

__all__ = ["ceil", "cos", "floor", "fmod", "round", "sign", "sin", "trunc"]


@primitive
def floor(input: np.ndarray) -> np.ndarray:
    """The largest integer not above each element.

    >>> floor(np.array([-1.5, 1.5], np.float32)).tolist()
    [-2.0, 1.0]
    """
    return np.floor(input)


@primitive
def ceil(input: np.ndarray) -> np.ndarray:
    """The smallest integer not below each element.

    >>> ceil(np.array([-1.5, 1.5], np.float32)).tolist()
    [-1.0, 2.0]
    """
    return np.ceil(input)


@primitive
def round(input: np.ndarray) -> np.ndarray:
    """Each element rounded to the nearest integer, ties to even (torch and ONNX).

    >>> round(np.array([0.5, 1.5, -2.5, 2.6], np.float32)).tolist()
    [0.0, 2.0, -2.0, 3.0]
    """
    return np.round(input)


@primitive
def sin(input: np.ndarray) -> np.ndarray:
    """Sine (radians).

    >>> sin(np.zeros(1, np.float32)).tolist()
    [0.0]
    """
    return np.sin(input)


@primitive
def cos(input: np.ndarray) -> np.ndarray:
    """Cosine (radians).

    >>> cos(np.zeros(1, np.float32)).tolist()
    [1.0]
    """
    return np.cos(input)


def trunc(input: np.ndarray) -> np.ndarray:
    """Each element rounded towards zero.

    >>> trunc(np.array([-1.5, 1.5], np.float32)).tolist()
    [-1.0, 1.0]
    """
    return where(lt(input, 0.0), ceil(input), floor(input))


def sign(input: np.ndarray) -> np.ndarray:
    """-1, 0 or 1 by the sign of each element (0 for NaN).

    >>> sign(np.array([-2.0, 0.0, 3.0], np.float32)).tolist()
    [-1.0, 0.0, 1.0]
    """
    return (cast(gt(input, 0.0), input.dtype) - cast(lt(input, 0.0), input.dtype))


def fmod(input: np.ndarray, other: np.ndarray | float) -> np.ndarray:
    """C's ``fmod``: the remainder of truncated division, with the sign of ``input``, as
    ``input - trunc(input / other) * other`` (torch.fmod, ONNX Mod with fmod=1); ``input``
    itself where ``other`` is infinite (where that formula gives NaN).

    >>> fmod(np.array([-7.0, 7.0], np.float32), 3.0).tolist()
    [-1.0, 1.0]
    """
    remainder = input - trunc(input / other) * other
    if isinstance(other, (int, float)):
        return input if np.isinf(other) else remainder
    return where(eq(abs(other), np.inf), input, remainder)
