"""hardswish: the composite ``nn.functional.hardswish``, recognised as one node by
``recognize_composites`` and computed by one kernel (or a gemm or conv epilogue)."""

from nn import functional as F

from ._families import Unary


class Hardswish(Unary):
    name = "hardswish"
    composite_forms = (F.hardswish,)


OP = Hardswish()
