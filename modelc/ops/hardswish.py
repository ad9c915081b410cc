"""hardswish: the composite ``nn.functional.hardswish``, recognised as one node by
``recognize_composites`` and computed by one kernel (or a gemm or conv epilogue)."""

from typing import Any

import numpy as np

from nn import functional as F

from ._families import Unary


def _hardswish_as_paddle_exports_it(x: Any) -> Any:
    """HardSwish as paddle2onnx writes it: ``Add 3, Clip 0..6, Mul x, Div 6``: the product
    taken before the division."""
    return F.div(F.mul(x, F.relu6(F.add(x, 3.0))), 6.0)


def _hardswish_as_hard_sigmoid_times_x(x: Any) -> Any:
    """HardSwish as ``HardSigmoid(alpha=1/6, beta=0.5) * x`` (PP-LCNetV3 in paddle2onnx's
    PP-OCRv5 recognizer), the HardSigmoid as the ONNX importer expands it: ``x * alpha +
    beta`` clipped to [0, 1], alpha an ONNX float attribute (1/6 rounded to float32)."""
    sixth = float(np.float32(1.0 / 6.0))
    return F.mul(F.minimum(F.maximum(F.add(F.mul(x, sixth), 0.5), 0.0), 1.0), x)


class Hardswish(Unary):
    name = "hardswish"
    composite_forms = (F.hardswish, _hardswish_as_paddle_exports_it,
                       _hardswish_as_hard_sigmoid_times_x)


OP = Hardswish()
