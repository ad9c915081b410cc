"""ne: elementwise ``x != y`` (bool) with numpy broadcasting."""

from ._families import Compare


class Ne(Compare):
    name = "ne"


OP = Ne()
