"""div: elementwise ``x / y`` with numpy broadcasting."""

from ._families import Binary


class Div(Binary):
    name = "div"
    kernel = "f32_div"


OP = Div()
