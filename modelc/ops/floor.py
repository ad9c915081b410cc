"""floor: elementwise the largest integer not above x."""

from ._families import Unary


class Floor(Unary):
    name = "floor"


OP = Floor()
