"""lt: elementwise ``x < y`` (bool) with numpy broadcasting."""

from ._families import Compare


class Lt(Compare):
    name = "lt"


OP = Lt()
