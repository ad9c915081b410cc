"""avg_pool2d: the mean of each window (torch's count_include_pad and ceil_mode rules)."""

from ._pool import Pool2d


class AvgPool2d(Pool2d):
    name = "avg_pool2d"


OP = AvgPool2d()
