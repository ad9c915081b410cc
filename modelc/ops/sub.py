"""sub: elementwise ``x - y`` with numpy broadcasting."""

from ._families import Binary


class Sub(Binary):
    name = "sub"
    kernel = "f32_sub"


OP = Sub()
