"""ge: elementwise ``x >= y`` (bool) with numpy broadcasting."""

from ._families import Compare


class Ge(Compare):
    name = "ge"


OP = Ge()
