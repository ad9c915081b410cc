"""softmax: ``exp(x - max) / sum(exp(x - max))`` along ``dim`` (lowered for the last axis;
the ``softmax_last_axis`` pass moves any other there)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CompileError
from ._families import SameShape
from ._shapes import axis

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Softmax(SameShape):
    name = "softmax"

    def lower(self, node: Node, ctx: LowerContext) -> None:
        shape = node.inputs[0].shape
        if axis(node.attrs["dim"], len(shape)) != len(shape) - 1:
            raise CompileError("softmax is lowered along the last axis only (the "
                               "softmax_last_axis pass moves other axes there)")
        ctx.address(node.inputs[0])
        ctx.address(node.output)
        ctx.numel(shape[:-1])
        ctx.numel(shape[-1:])
        ctx.call("f32_softmax")


OP = Softmax()
