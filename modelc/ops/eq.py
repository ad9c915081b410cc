"""eq: elementwise ``x == y`` (bool) with numpy broadcasting."""

from ._families import Compare


class Eq(Compare):
    name = "eq"


OP = Eq()
