"""sum: the sum over ``dim`` (all axes when None), keeping axes with ``keepdim``."""

from ._families import Reduce


class Sum(Reduce):
    name = "sum"
    kernel_op = "sum"


OP = Sum()
