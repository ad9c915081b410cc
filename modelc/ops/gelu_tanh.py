"""gelu_tanh: GELU's tanh approximation (``nn.functional.gelu(x, approximate='tanh')``),
recognised as one node by ``recognize_composites`` and computed by one kernel."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nn import functional as F

from ._families import Unary

CUBIC = float(np.float32(0.044715))
SQRT_2_OVER_PI = float(np.float32(math.sqrt(2.0 / math.pi)))
"""The float32 constants exporters write (jax2tf, torch)."""


def _gelu_tanh_as_jax_exports_it(x: Any) -> Any:
    """``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`` as jax2tf writes it
    (magika): the cube as ``x * (x * (0.044715 * x))``, constants on the left."""
    cube = F.mul(x, F.mul(x, F.mul(CUBIC, x)))
    inner = F.mul(SQRT_2_OVER_PI, F.add(x, cube))
    return F.mul(x, F.mul(0.5, F.add(1.0, F.tanh(inner))))


def _gelu_tanh_as_torchscript_exports_it(x: Any) -> Any:
    """The same as torch's TorchScript exporter writes it (opset 17, imported): the cube as
    ``x * (x * x)``, ``0.5`` applied last."""
    inner = F.mul(SQRT_2_OVER_PI, F.add(x, F.mul(CUBIC, F.mul(x, F.mul(x, x)))))
    return F.mul(0.5, F.mul(x, F.add(1.0, F.tanh(inner))))


class GeluTanh(Unary):
    name = "gelu_tanh"
    composite_forms = (F.gelu_tanh, _gelu_tanh_as_jax_exports_it,
                       _gelu_tanh_as_torchscript_exports_it)


OP = GeluTanh()
