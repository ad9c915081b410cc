"""add: elementwise ``x + y`` with numpy broadcasting."""

from ._families import Binary


class Add(Binary):
    name = "add"


OP = Add()
