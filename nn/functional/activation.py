"""Activation functions written only in primitives (composites): they trace and compile
with no kernel of their own. ``relu``, ``sigmoid`` and ``tanh`` are primitives in
``elementwise``."""

from __future__ import annotations

import math

import numpy as np

from .elementwise import erf, maximum, minimum, relu, sigmoid, tanh

__all__ = ["gelu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "relu6", "silu"]


def gelu(input: np.ndarray, approximate: str = "none") -> np.ndarray:
    """``x * Phi(x)``: exact through ``erf``, or the ``'tanh'`` approximation.

    Raises:
        ValueError: ``approximate`` is neither ``'none'`` nor ``'tanh'``.

    >>> [round(v, 4) for v in gelu(np.array([0.0, 1.0], np.float32)).tolist()]
    [0.0, 0.8413]
    """
    if approximate == "none":
        return input * 0.5 * (erf(input * (1 / math.sqrt(2.0))) + 1.0)
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * 0.5 * (tanh(inner) + 1.0)
    raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")


def silu(input: np.ndarray) -> np.ndarray:
    """``x * sigmoid(x)`` (swish).

    >>> silu(np.array([0.0], np.float32)).tolist()
    [0.0]
    """
    return input * sigmoid(input)


def hardtanh(input: np.ndarray, min_val: float = -1.0, max_val: float = 1.0) -> np.ndarray:
    """``input`` clamped to ``[min_val, max_val]``.

    >>> hardtanh(np.array([-3.0, 0.5, 3.0], np.float32)).tolist()
    [-1.0, 0.5, 1.0]
    """
    return minimum(maximum(input, min_val), max_val)


def relu6(input: np.ndarray) -> np.ndarray:
    """``min(max(x, 0), 6)``.

    >>> relu6(np.array([-1.0, 7.0], np.float32)).tolist()
    [0.0, 6.0]
    """
    return hardtanh(input, 0.0, 6.0)


def leaky_relu(input: np.ndarray, negative_slope: float = 0.01) -> np.ndarray:
    """``x`` for ``x >= 0``, else ``negative_slope * x``.

    >>> leaky_relu(np.array([-2.0, 2.0], np.float32), 0.5).tolist()
    [-1.0, 2.0]
    """
    return relu(input) + minimum(input, 0.0) * negative_slope


def hardsigmoid(input: np.ndarray) -> np.ndarray:
    """``relu6(x + 3) / 6``.

    >>> hardsigmoid(np.array([-3.0, 0.0, 3.0], np.float32)).tolist()
    [0.0, 0.5, 1.0]
    """
    return relu6(input + 3.0) / 6.0


def hardswish(input: np.ndarray) -> np.ndarray:
    """``x * relu6(x + 3) / 6``.

    >>> hardswish(np.array([-3.0, 3.0], np.float32)).tolist()
    [-0.0, 3.0]
    """
    return input * hardsigmoid(input)
