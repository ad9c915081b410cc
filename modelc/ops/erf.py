"""erf: elementwise the error function."""

from ._families import Unary


class Erf(Unary):
    name = "erf"


OP = Erf()
