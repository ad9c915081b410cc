"""relu: elementwise ``max(x, 0)``; usually fused into the producer's epilogue."""

from ._families import Unary


class Relu(Unary):
    name = "relu"


OP = Relu()
