"""pow: elementwise ``x ** y`` with numpy broadcasting."""

from ._families import Binary


class Pow(Binary):
    name = "pow"


OP = Pow()
