"""rsqrt: elementwise 1 / sqrt(x)."""

from ._families import Unary


class Rsqrt(Unary):
    name = "rsqrt"


OP = Rsqrt()
