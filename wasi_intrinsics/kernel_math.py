"""The math the host kernels share: the formula language's functions on numpy arrays and the
ABI's unary ops (activations) computed in float64, the reference the wasm kernels are
measured against."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from wasm_kernels import abi, formula


def _special(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """``erf`` or ``erfc`` in float64: scipy's when installed, else ``math``'s per element."""
    try:
        from scipy import special
    except ImportError:
        return np.vectorize(getattr(math, name), otypes=[np.float64])
    return getattr(special, name)


NUMPY_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "max": np.maximum, "min": np.minimum, "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp,
    "log": np.log, "tanh": np.tanh, "erf": lambda x: _special("erf")(x),
    "erfc": lambda x: _special("erfc")(x), "floor": np.floor, "ceil": np.ceil,
    "round": np.round, "sin": np.sin, "cos": np.cos,
}
"""The formula language's functions (``wasm_kernels.formula``) on numpy arrays."""


def unary(op: str, x: np.ndarray) -> np.ndarray:
    """The ABI's unary op ``op`` of ``x``, computed in float64 (the reference the wasm
    kernels are measured against)."""
    with np.errstate(all="ignore"):
        return formula.evaluate(abi.UNARY_OPS[op], {"x": x.astype(np.float64)},
                                NUMPY_FUNCTIONS)


def activate(x: np.ndarray, op: str) -> np.ndarray:
    """``unary(op, x)`` rounded to float32, as a fused activation stores it."""
    with np.errstate(over="ignore"):
        return unary(op, x).astype(np.float32)
