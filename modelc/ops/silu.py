"""silu: the composite ``nn.functional.silu``, recognised as one node by
``recognize_composites`` and computed by one kernel (or a gemm epilogue)."""

from nn import functional as F

from ._families import Unary


class Silu(Unary):
    name = "silu"
    composite_forms = (F.silu,)


OP = Silu()
