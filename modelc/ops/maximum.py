"""maximum: elementwise ``max(x, y)`` with numpy broadcasting."""

from ._families import Binary


class Maximum(Binary):
    name = "maximum"
    kernel = "f32_max"


OP = Maximum()
