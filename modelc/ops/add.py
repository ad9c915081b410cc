"""add: elementwise ``x + y`` with numpy broadcasting."""

from ._families import Binary


class Add(Binary):
    name = "add"
    kernel = "f32_add"


OP = Add()
