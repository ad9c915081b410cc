"""gt: elementwise ``x > y`` (bool) with numpy broadcasting."""

from ._families import Compare


class Gt(Compare):
    name = "gt"


OP = Gt()
