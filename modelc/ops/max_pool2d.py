"""max_pool2d: the maximum of each window (padding counts as -inf)."""

from ._pool import Pool2d


class MaxPool2d(Pool2d):
    name = "max_pool2d"


OP = MaxPool2d()
