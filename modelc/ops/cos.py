"""cos: elementwise cosine, a range-reduced polynomial (2e-7 absolute for |x| <= 8192)."""

from ._families import Unary


class Cos(Unary):
    name = "cos"


OP = Cos()
