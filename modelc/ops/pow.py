"""pow: elementwise ``x ** y`` with numpy broadcasting."""

from ._families import Binary


class Pow(Binary):
    name = "pow"
    operands = ("input", "exponent")


OP = Pow()
