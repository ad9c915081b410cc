"""permute: axes reordered so that output axis i is input axis ``dims[i]``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._shapes import axis
from ._strided import copy, dense_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Permute(OpDef):
    name = "permute"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = shapes[0]
        dims = [axis(d, len(shape)) for d in attrs["dims"]]
        if sorted(dims) != list(range(len(shape))):
            raise CompileError(f"permute: {list(attrs['dims'])} is not a permutation of "
                               f"{len(shape)} axes")
        return [(tuple(shape[d] for d in dims), dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        shape = node.inputs[0].shape
        strides = dense_strides(shape)
        order = [axis(d, len(shape)) for d in node.attrs["dims"]]
        copy(ctx, node.inputs[0], node.output,
             [None if shape[d] == 1 else strides[d] for d in order])


OP = Permute()
