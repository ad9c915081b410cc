"""log: elementwise natural logarithm."""

from ._families import Unary


class Log(Unary):
    name = "log"


OP = Log()
