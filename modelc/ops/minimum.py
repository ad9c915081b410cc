"""minimum: elementwise ``min(x, y)`` with numpy broadcasting."""

from ._families import Binary


class Minimum(Binary):
    name = "minimum"
    kernel = "f32_min"


OP = Minimum()
