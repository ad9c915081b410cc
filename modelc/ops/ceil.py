"""ceil: elementwise the smallest integer not below x."""

from ._families import Unary


class Ceil(Unary):
    name = "ceil"


OP = Ceil()
