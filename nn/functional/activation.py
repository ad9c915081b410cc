"""Activation functions written only in primitives (composites): they trace and compile
with no kernel of their own. ``relu``, ``sigmoid`` and ``tanh`` are primitives in
``elementwise``."""

from __future__ import annotations

import math

import numpy as np

from .elementwise import abs, erf, exp, gt, log, lt, maximum, minimum, relu, sigmoid, tanh, where

__all__ = ["celu", "elu", "gelu", "gelu_tanh", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
           "leaky_relu", "mish", "relu6", "selu", "shrink", "silu", "softplus", "softshrink",
           "softsign"]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


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


def gelu_tanh(input: np.ndarray) -> np.ndarray:
    """``gelu(input, approximate='tanh')`` as an op of its own (one kernel).

    >>> [round(v, 4) for v in gelu_tanh(np.array([0.0, 1.0], np.float32)).tolist()]
    [0.0, 0.8412]
    """
    return gelu(input, approximate="tanh")


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


def elu(input: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``.

    >>> elu(np.array([-100.0, 2.0], np.float32)).tolist()
    [-1.0, 2.0]
    """
    # NOTE: exp of min(x, 0) only, so a large positive x cannot overflow into inf * 0.
    return relu(input) + (exp(minimum(input, 0.0)) - 1.0) * alpha


def selu(input: np.ndarray, alpha: float = SELU_ALPHA, scale: float = SELU_SCALE
         ) -> np.ndarray:
    """``scale * elu(x, alpha)``; the defaults are torch's (ONNX's ``gamma`` is ``scale``).

    >>> selu(np.array([0.0, 1.0], np.float32)).tolist()
    [0.0, 1.0507010221481323]
    """
    return elu(input, alpha) * scale


def celu(input: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    >>> celu(np.array([-100.0, 2.0], np.float32), 2.0).tolist()
    [-2.0, 2.0]
    """
    return relu(input) + (exp(minimum(input, 0.0) * (1.0 / alpha)) - 1.0) * alpha


def softplus(input: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    """``log(1 + exp(beta * x)) / beta``, as ``(relu(bx) + log(1 + exp(-|bx|))) / beta``,
    which never overflows; torch's linear region past ``threshold`` agrees with it to
    float32 precision, so ``threshold`` changes nothing.

    >>> [round(v, 4) for v in softplus(np.array([0.0, 30.0], np.float32)).tolist()]
    [0.6931, 30.0]
    """
    scaled = input * beta
    return (relu(scaled) + log(exp(-abs(scaled)) + 1.0)) * (1.0 / beta)


def softsign(input: np.ndarray) -> np.ndarray:
    """``x / (1 + |x|)``.

    >>> softsign(np.array([-3.0, 1.0], np.float32)).tolist()
    [-0.75, 0.5]
    """
    return input / (abs(input) + 1.0)


def mish(input: np.ndarray) -> np.ndarray:
    """``x * tanh(softplus(x))``.

    >>> mish(np.array([0.0], np.float32)).tolist()
    [0.0]
    """
    return input * tanh(softplus(input))


def shrink(input: np.ndarray, lambd: float = 0.5, bias: float = 0.0) -> np.ndarray:
    """ONNX's Shrink: ``x - bias`` above ``lambd``, ``x + bias`` below ``-lambd``, else 0.

    >>> shrink(np.array([-2.0, 0.1, 2.0], np.float32), 1.0, 0.5).tolist()
    [-1.5, 0.0, 1.5]
    """
    return where(gt(input, lambd), input - bias, where(lt(input, -lambd), input + bias, 0.0))


def hardshrink(input: np.ndarray, lambd: float = 0.5) -> np.ndarray:
    """``x`` where ``|x| > lambd``, else 0.

    >>> hardshrink(np.array([-1.0, 0.2, 0.75], np.float32)).tolist()
    [-1.0, 0.0, 0.75]
    """
    return shrink(input, lambd, 0.0)


def softshrink(input: np.ndarray, lambd: float = 0.5) -> np.ndarray:
    """``x`` moved ``lambd`` towards 0, and 0 where ``|x| <= lambd``.

    >>> softshrink(np.array([-1.0, 0.2, 0.75], np.float32)).tolist()
    [-0.5, 0.0, 0.25]
    """
    return shrink(input, lambd, lambd)
