"""relu6: the composite ``nn.functional.relu6``, recognised as one node by
``recognize_composites`` and computed by one kernel (or a gemm epilogue)."""

from nn import functional as F

from ._families import Unary


class Relu6(Unary):
    name = "relu6"
    composite_forms = (F.relu6,)


OP = Relu6()
