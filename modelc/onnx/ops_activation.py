"""ONNX elementwise and activation ops beyond the basic ones: rounding, sign and Mod, the
trigonometric pair, and the exponential-family activations, each one ``nn.functional``
call (a kernel-backed primitive or a composite of primitives).

ONNX's attribute defaults differ from torch's in places (Selu's ``alpha`` and ``gamma``
are float32 constants); each function passes the ONNX ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from . import int_division
from .node import OnnxNode
from .ops_math import integer_operands

_SELU_ALPHA = 1.67326319217681884765625
_SELU_GAMMA = 1.05070102214813232421875


def _unary(fn: Callable[[Any], Any]) -> Callable[[OnnxNode], Any]:
    return lambda n: fn(n.input(0))


def mod(n: OnnxNode) -> Any:
    """Mod: ``fmod=1`` is C's fmod, ``fmod=0`` the floor remainder (the divisor's sign); at
    run time for floats and integers (exact: ``int_division``).

    Raises:
        CompileError: unsigned integers of 32 or 64 bits computed at run time.
    """
    a, b = n.input(0), n.input(1)
    known = isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    fmod = bool(n.attr("fmod", 0))
    if known:
        return np.fmod(a, b) if fmod else np.mod(a, b)
    dtype = np.dtype(str(a.dtype))
    if dtype.kind in "iu":
        remainder = int_division.truncated(*integer_operands(n, a, b))[1]
    else:
        remainder = F.fmod(a, b)
    return remainder if fmod else int_division.floor_remainder(remainder, b)


def _swish(x: Any, alpha: float) -> Any:
    """``x * sigmoid(alpha * x)``: SiLU (one kernel) at ``alpha`` 1."""
    return F.silu(x) if alpha == 1.0 else F.mul(x, F.sigmoid(F.mul(x, alpha)))


def swiglu(n: OnnxNode) -> Any:
    """SwiGLU (opset 28): ``Swish_alpha(A) * B`` of two inputs of one shape.

    Raises:
        CompileError: the inputs' shapes differ (SwiGLU does not broadcast).
    """
    gate, value = n.input(0), n.input(1)
    if tuple(gate.shape) != tuple(value.shape):
        raise n.error(f"A {list(gate.shape)} and B {list(value.shape)} must have one shape")
    return F.mul(_swish(gate, n.attr("alpha", 1.0)), value)


OPS: dict[str, Callable[[OnnxNode], Any]] = {
    "Floor": _unary(F.floor), "Ceil": _unary(F.ceil), "Round": _unary(F.round),
    "Sin": _unary(F.sin), "Cos": _unary(F.cos), "Sign": _unary(F.sign),
    "Softsign": _unary(F.softsign), "Softplus": _unary(F.softplus), "Mish": _unary(F.mish),
    "Elu": lambda n: F.elu(n.input(0), n.attr("alpha", 1.0)),
    "Celu": lambda n: F.celu(n.input(0), n.attr("alpha", 1.0)),
    "Selu": lambda n: F.selu(n.input(0), n.attr("alpha", _SELU_ALPHA),
                             n.attr("gamma", _SELU_GAMMA)),
    "ThresholdedRelu": lambda n: F.where(F.gt(n.input(0), n.attr("alpha", 1.0)), n.input(0),
                                         0.0),
    "Shrink": lambda n: F.shrink(n.input(0), n.attr("lambd", 0.5), n.attr("bias", 0.0)),
    "Mod": mod, "Swish": lambda n: _swish(n.input(0), n.attr("alpha", 1.0)), "SwiGLU": swiglu,
}
