"""sqrt: elementwise square root."""

from ._families import Unary


class Sqrt(Unary):
    name = "sqrt"


OP = Sqrt()
