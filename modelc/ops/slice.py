"""slice: ``input[..., start:end:step, ...]`` on axis ``dim`` (Python bounds); lowered to a
strided copy starting at ``start`` with the axis stride scaled by ``step``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import OpDef
from ._movement import axis_offset, copy_region, require_float
from ._shapes import axis, require_static
from ._strided import dense_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Slice(OpDef):
    name = "slice"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = shapes[0]
        dim = axis(attrs["dim"], len(shape))
        require_static(shape, (dim,), self.name)
        length = len(range(shape[dim])[attrs.get("start"):attrs.get("end"):attrs.get("step", 1)])
        return [(shape[:dim] + (length,) + shape[dim + 1:], dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source = node.inputs[0]
        require_float(self.name, source, node.output)
        shape = source.shape
        dim = axis(node.attrs["dim"], len(shape))
        picked = range(shape[dim])[node.attrs.get("start"):node.attrs.get("end"):
                                   node.attrs.get("step", 1)]
        strides = dense_strides(shape)
        strides[dim] = (picked.step,) + strides[dim]
        copy_region(ctx, node.output.shape, source, axis_offset(shape, dim, picked.start),
                    strides, node.output, (0,))


OP = Slice()
