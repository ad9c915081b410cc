"""amax: the maximum over ``dim`` (all axes when None), keeping axes with ``keepdim``."""

from ._families import Reduce


class Amax(Reduce):
    name = "amax"
    kernel_op = "max"


OP = Amax()
