"""mean: the mean over ``dim`` (all axes when None), keeping axes with ``keepdim``."""

from ._families import Reduce


class Mean(Reduce):
    name = "mean"
    kernel_op = "mean"


OP = Mean()
