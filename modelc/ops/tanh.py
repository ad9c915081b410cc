"""tanh: elementwise hyperbolic tangent."""

from ._families import Unary


class Tanh(Unary):
    name = "tanh"


OP = Tanh()
