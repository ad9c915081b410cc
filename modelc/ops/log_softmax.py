"""log_softmax: ``x - max - log(sum(exp(x - max)))`` along ``dim``."""

from ._families import SameShape


class LogSoftmax(SameShape):
    name = "log_softmax"


OP = LogSoftmax()
