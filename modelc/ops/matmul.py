"""matmul: numpy's matrix product with broadcast batch dims (1-D operands promoted).

Lowered to one gemm when the right operand has no batch (its rows are shared), else to the
strided batched kernel ``f32_bmm`` (a batch-less left operand is broadcast with stride 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._shapes import broadcast

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Matmul(OpDef):
    name = "matmul"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        a, b = shapes
        if not a or not b:
            raise CompileError("matmul needs operands of rank >= 1")
        a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
        b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
        if a2[-1] != b2[-2]:
            raise CompileError(f"matmul: inner dims differ: {list(a)} @ {list(b)}")
        out = broadcast(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
        if len(a) == 1:
            out = out[:-2] + out[-1:]
        if len(b) == 1:
            out = out[:-1]
        return [(out, dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        a, b = node.inputs
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise CompileError("matmul with a 1-D operand is not lowered; reshape it to 2-D")
        batch = node.output.shape[:-2]
        a_batch, b_batch = a.shape[:-2], b.shape[:-2]
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        ctx.address(a)
        ctx.address(b)
        ctx.address(node.output)
        if all(d == 1 for d in b_batch):
            ctx.numel(a.shape[:-1])
            ctx.numel((k,))
            ctx.numel((n,))
            ctx.call("f32_gemm")
            return
        if tuple(b_batch) != tuple(batch) or a_batch and tuple(a_batch) != tuple(batch) \
                and not all(d == 1 for d in a_batch):
            raise CompileError(f"matmul broadcasting {list(a.shape)} @ {list(b.shape)} is "
                               "not lowered")
        ctx.numel(batch)
        for dims in ((m,), (k,), (n,)):
            ctx.numel(dims)
        if all(d == 1 for d in a_batch):
            ctx.push(0)
        else:
            ctx.numel((m, k))
        ctx.numel((k, n))
        ctx.call("f32_bmm")


OP = Matmul()
