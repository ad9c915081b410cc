"""maximum: elementwise ``max(x, y)`` with numpy broadcasting."""

from ._families import Binary


class Maximum(Binary):
    name = "maximum"


OP = Maximum()
