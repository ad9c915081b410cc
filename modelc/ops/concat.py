"""concat: tensors joined along an existing axis ``dim``; lowered to one strided copy per
input into its region of the output."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._movement import axis_offset, copy_region
from ._shapes import axis, require_static
from ._strided import dense_strides, element_size

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Concat(OpDef):
    name = "concat"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        first = shapes[0]
        dim = axis(attrs.get("dim", 0), len(first))
        for shape in shapes:
            require_static(shape, (dim,), self.name)
            if len(shape) != len(first) or any(a != b for i, (a, b) in
                                               enumerate(zip(shape, first)) if i != dim):
                raise CompileError(f"concat: shapes {[list(s) for s in shapes]} differ "
                                   f"outside dim {dim}")
        total = sum(s[dim] for s in shapes)
        return [(first[:dim] + (total,) + first[dim + 1:], dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        out = node.output
        element_size(self.name, out, *node.inputs)
        dim = axis(node.attrs.get("dim", 0), len(out.shape))
        start = 0
        for part in node.inputs:
            copy_region(ctx, part.shape, part, (0,), dense_strides(part.shape), out,
                        axis_offset(out.shape, dim, start))
            start += part.shape[dim]


OP = Concat()
