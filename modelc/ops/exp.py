"""exp: elementwise e^x."""

from ._families import Unary


class Exp(Unary):
    name = "exp"


OP = Exp()
