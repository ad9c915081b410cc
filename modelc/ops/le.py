"""le: elementwise ``x <= y`` (bool) with numpy broadcasting."""

from ._families import Compare


class Le(Compare):
    name = "le"


OP = Le()
