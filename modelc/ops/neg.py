"""neg: elementwise -x."""

from ._families import Unary


class Neg(Unary):
    name = "neg"


OP = Neg()
