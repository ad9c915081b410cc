"""round: elementwise x rounded to nearest, ties to even."""

from ._families import Unary


class Round(Unary):
    name = "round"


OP = Round()
