"""hardswish: the composite ``nn.functional.hardswish``, recognised as one node by
``recognize_composites`` and computed by one kernel (or a gemm or conv epilogue)."""

from typing import Any

from nn import functional as F

from ._families import Unary


def _hardswish_as_paddle_exports_it(x: Any) -> Any:
    """HardSwish as paddle2onnx writes it: ``Add 3, Clip 0..6, Mul x, Div 6``: the product
    taken before the division."""
    return F.div(F.mul(x, F.relu6(F.add(x, 3.0))), 6.0)


class Hardswish(Unary):
    name = "hardswish"
    composite_forms = (F.hardswish, _hardswish_as_paddle_exports_it)


OP = Hardswish()
