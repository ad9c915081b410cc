"""gelu: the composite ``nn.functional.gelu``, recognised as one node by
``recognize_composites`` and computed by one kernel (or a gemm epilogue)."""

from ._families import Unary


class Gelu(Unary):
    name = "gelu"


OP = Gelu()
