"""dequantize_linear: int8/uint8 -> f32 with a scale and zero point per tensor or along
``axis``; lowered to ``q{u,s}8_dequantize_linear`` (int32 input, a bias, runs in the interpreter and
is folded at compile time when constant)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._quantized import QUANTIZED, check_pair, dequantize
from ._shapes import axis as normalized

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class DequantizeLinear(OpDef):
    name = "dequantize_linear"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        if dtypes[0] not in QUANTIZED + ("int32",):
            raise CompileError(f"dequantize_linear expects int8, uint8 or int32 input, got "
                               f"{dtypes[0]}")
        channels = shapes[0][normalized(attrs.get("axis", 1), len(shapes[0]), "axis")] \
            if len(shapes[1]) == 1 else None
        zero_dtype = "int8" if dtypes[2] == "int32" else dtypes[2]
        check_pair(self.name, "the", (shapes[1], dtypes[1]), (shapes[2], zero_dtype), channels)
        if dtypes[2] != dtypes[0]:
            raise CompileError(f"dequantize_linear: the zero point is {dtypes[2]} but the "
                               f"input is {dtypes[0]}")
        return [(shapes[0], "float32")]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        x, scale, zero_point = node.inputs
        if x.dtype not in QUANTIZED:
            raise CompileError(f"dequantize_linear of {x.dtype} is not lowered; it lowers for "
                               f"{list(QUANTIZED)}")
        axis = normalized(node.attrs.get("axis", 1), len(x.shape), "axis") \
            if scale.shape else None
        dequantize(ctx, x, partial(ctx.address, scale), partial(ctx.address, zero_point),
                   partial(ctx.address, node.output), axis)


OP = DequantizeLinear()
