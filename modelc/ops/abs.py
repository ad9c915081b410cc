"""abs: elementwise absolute value."""

from ._families import Unary


class Abs(Unary):
    name = "abs"


OP = Abs()
