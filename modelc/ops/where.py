"""where: ``input`` where ``condition`` is true, else ``other``, with broadcasting.

Lowered to the strided ``f32_where`` (bool condition, float operands; a Python scalar
operand is placed as one float and broadcast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from ._families import Binary
from ._shapes import broadcast
from ._strided import emit_strided, operand_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Where(Binary):
    name = "where"
    operands = ("input", "other")

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        if dtypes[0] != "bool":
            raise CompileError(f"where: condition must be bool, got {dtypes[0]}")
        values = [d for d in dtypes[1:]] or ["float32"]
        return [(broadcast(*shapes), values[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = dict(zip(node.input_names, node.inputs))
        values = [named[n].dtype for n in self.operands if n in named] + [node.output.dtype]
        if any(d != "float32" for d in values):
            raise CompileError(f"where: only float32 values lower to wasm, got {values}")
        condition = named["condition"]
        ctx.address(condition)
        strides = [operand_strides(condition.shape, len(node.output.shape))]
        strides += self.push_operands(node, ctx)
        ctx.address(node.output)
        emit_strided(ctx, "f32_where", node.output.shape, strides)


OP = Where()
