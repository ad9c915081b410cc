"""sigmoid: elementwise 1 / (1 + e^-x)."""

from ._families import Unary


class Sigmoid(Unary):
    name = "sigmoid"


OP = Sigmoid()
