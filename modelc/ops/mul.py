"""mul: elementwise ``x * y`` with numpy broadcasting."""

from ._families import Binary


class Mul(Binary):
    name = "mul"
    kernel = "f32_mul"


OP = Mul()
