"""dynamic_quantize_linear: f32 -> (uint8 y, f32 scale, uint8 zero point) over the tensor's
own range, as ONNX DynamicQuantizeLinear; lowered to ``f32_dynamic_quantize_linear``. The scale
and zero point are 0-d values at run time that the quantized products read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._quantized import FLOAT

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class DynamicQuantizeLinear(OpDef):
    name = "dynamic_quantize_linear"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        if dtypes[0] != FLOAT:
            raise CompileError(f"dynamic_quantize_linear expects float32, got {dtypes[0]}")
        return [(shapes[0], "uint8"), ((), FLOAT), ((), "uint8")]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        ctx.address(node.inputs[0])
        for value in node.outputs:
            ctx.address(value)
        ctx.numel(node.inputs[0].shape)
        ctx.call("f32_dynamic_quantize_linear")


OP = DynamicQuantizeLinear()
