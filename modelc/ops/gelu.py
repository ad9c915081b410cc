"""gelu: the composite ``nn.functional.gelu``, recognised as one node by
``recognize_composites`` and computed by one kernel (or a gemm epilogue)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nn import functional as F

from ._families import Unary


def _gelu_as_exported(x: Any) -> Any:
    """GELU as torch's ONNX exporter writes it: ``x * (erf(x / sqrt(2)) + 1) * 0.5``, the
    divisor a float32 constant."""
    return F.mul(F.mul(x, F.add(F.erf(F.div(x, float(np.float32(math.sqrt(2.0))))), 1.0)),
                 0.5)


def _gelu_as_tf2onnx(x: Any) -> Any:
    """GELU as tf2onnx writes Keras's: ``(0.5 * x) * (1 + erf(x * (1 / sqrt(2))))``, the
    factor a float32 constant (magika)."""
    return F.mul(F.mul(0.5, x),
                 F.add(1.0, F.erf(F.mul(x, float(np.float32(1.0 / math.sqrt(2.0)))))))


class Gelu(Unary):
    name = "gelu"
    composite_forms = (F.gelu, _gelu_as_exported, _gelu_as_tf2onnx)


OP = Gelu()
