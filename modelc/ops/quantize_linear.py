"""quantize_linear: f32 -> int8/uint8 with a scale and zero point per tensor or along
``axis``; lowered to ``f32_quantize_linear`` (scale and zero point may be computed at run time)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._quantized import FLOAT, check_pair, quantize
from ._shapes import axis as normalized

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class QuantizeLinear(OpDef):
    name = "quantize_linear"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        if dtypes[0] != FLOAT:
            raise CompileError(f"quantize_linear expects a float32 input, got {dtypes[0]}")
        channels = shapes[0][normalized(attrs.get("axis", 1), len(shapes[0]), "axis")] \
            if len(shapes[1]) == 1 else None
        check_pair(self.name, "the", (shapes[1], dtypes[1]), (shapes[2], dtypes[2]), channels)
        return [(shapes[0], dtypes[2])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        x, scale, zero_point = node.inputs
        axis = normalized(node.attrs.get("axis", 1), len(x.shape), "axis") \
            if scale.shape else None
        quantize(ctx, partial(ctx.address, x), partial(ctx.address, scale),
                 partial(ctx.address, zero_point), node.output, x.shape, axis)


OP = QuantizeLinear()
