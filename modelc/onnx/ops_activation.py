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

from .node import OnnxNode
from .ops_math import as_float32, narrow_quotient

_SELU_ALPHA = 1.67326319217681884765625
_SELU_GAMMA = 1.05070102214813232421875


def _unary(fn: Callable[[Any], Any]) -> Callable[[OnnxNode], Any]:
    return lambda n: fn(n.input(0))


def mod(n: OnnxNode) -> Any:
    """Mod: ``fmod=1`` is C's fmod, ``fmod=0`` the floor remainder; at run time for float32
    (fmod=1) and 8- and 16-bit integers (both, exact through float32: ``narrow_quotient``).

    Raises:
        CompileError: ``fmod=0`` on floats, or wider integers, computed at run time.
    """
    a, b = n.input(0), n.input(1)
    known = isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    fmod = bool(n.attr("fmod", 0))
    if known:
        return np.fmod(a, b) if fmod else np.mod(a, b)
    dtype = np.dtype(str(a.dtype))
    if dtype.kind in "iu":  # a - round(a / b) * b, exact in float32 for 8 and 16 bits
        quotient = narrow_quotient(n, a, b, F.trunc if fmod else F.floor)
        return F.cast(F.sub(as_float32(a), F.mul(quotient, as_float32(b))), dtype)
    if fmod:
        return F.fmod(a, b)
    raise n.error("fmod=0 (the floor remainder) of float tensors computed at run time is not "
                  "supported; fmod=1 is")


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
    "Mod": mod,
}
