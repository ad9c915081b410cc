"""softmax: ``exp(x - max) / sum`` along ``dim``, numerically stable."""

from ._families import SameShape


class Softmax(SameShape):
    name = "softmax"


OP = Softmax()
