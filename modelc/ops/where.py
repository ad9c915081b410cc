"""where: ``input`` where ``condition`` is true, else ``other``, with broadcasting.

Lowered to the strided where kernel of the values' element size, with a bool condition; a
Python scalar operand is placed as one element and broadcast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi
from wasm_kernels.kernel_spec import ELEMENTS

from ..errors import CompileError
from ._families import Binary
from ._shapes import broadcast
from ._strided import emit_strided, operand_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


KERNELS = {dtype: abi.find("movement", "where", dtype=abi.MOVED[size]).name
           for dtype, (_, size) in ELEMENTS.items()}
"""The value dtypes ``where`` lowers for: the kernels move 1-, 2-, 4- or 8-byte elements bit
for bit, so each dtype goes through the one of its size."""


class Where(Binary):
    name = "where"
    operands = ("input", "other")

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        if dtypes[0] != "bool":
            raise CompileError(f"where: condition must be bool, got {dtypes[0]}")
        values = [d for d in dtypes[1:]] or ["float32"]
        return [(broadcast(*shapes), values[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        values = sorted({named[n].dtype for n in self.operands if n in named}
                        | {node.output.dtype})
        if len(values) != 1 or values[0] not in KERNELS:
            raise CompileError(f"where: values of one dtype among {sorted(KERNELS)} lower to "
                               f"wasm, got {values}")
        condition = named["condition"]
        ctx.address(condition)
        strides = [operand_strides(condition.shape, len(node.output.shape))]
        strides += self.push_operands(node, ctx)
        ctx.address(node.output)
        emit_strided(ctx, KERNELS[values[0]], node.output.shape, strides)


OP = Where()
