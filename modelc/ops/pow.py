"""pow: elementwise ``x ** y`` with numpy broadcasting. A constant scalar exponent is
rewritten into kernels that exist by the ``expand_powers`` pass; what reaches lowering is a
tensor exponent, or 0."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CompileError
from ._families import Binary

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Pow(Binary):
    name = "pow"
    operands = ("input", "exponent")

    def lower(self, node: Node, ctx: LowerContext) -> None:
        exponent = node.attrs.get("exponent", "a tensor")
        raise CompileError(f"pow lowers to wasm only with a constant scalar exponent other "
                           f"than 0, got {exponent}")


OP = Pow()
