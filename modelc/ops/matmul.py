"""matmul: numpy's matrix product with broadcast batch dims (1-D operands promoted).

Lowered to one gemm when the right operand has no batch (its rows are shared; ``f32_gemm``
packs B's panels and A's rows into scratch), else to the
strided batched kernel ``f32_bmm`` (a batch-less operand is broadcast with stride 0). A fused
residual ``add`` of a row broadcast over the matrix rows (attention's additive mask) makes
it ``f32_bmm_bias``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._shapes import broadcast

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


def _bias_split(residual: Shape, output: Shape) -> int | None:
    """How many leading batch axes a row-broadcast residual follows: with ``t`` returned,
    ``residual`` is (*output[:t], 1, ..., 1, 1, n) after padding to the output's rank, so
    each of its rows serves ``prod(output[t:-2])`` consecutive matrices. None otherwise."""
    if len(output) < 2 or len(residual) > len(output):
        return None
    padded = (1,) * (len(output) - len(residual)) + tuple(residual)
    if padded[-1] != output[-1] or padded[-2] != 1:
        return None
    batch, rows = tuple(output[:-2]), padded[:-2]
    split = 0
    while split < len(batch) and rows[split] == batch[split]:
        split += 1
    return split if all(d == 1 for d in rows[split:]) else None


def _gemm_scratch(node: Node) -> tuple[Shape, ...]:
    """``f32_gemm``'s scratch when ``node`` lowers to it (B batch-less, no fused residual):
    (n, k) floats for B's panels and A's shape for its rows, packed; else none."""
    named = node.named_inputs()
    a, b = named["input"], named["other"]
    if "residual" in named or len(b.shape) < 2 or any(d != 1 for d in b.shape[:-2]):
        return ()
    return (b.shape[-1], b.shape[-2]), tuple(a.shape)


class Matmul(OpDef):
    name = "matmul"
    epilogues = frozenset({"add"})

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        """``f32_gemm``'s packed panels of B and rows of A."""
        return _gemm_scratch(node)

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        a, b = shapes[:2]
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

    def accepts_residual(self, residual: Shape, output: Shape) -> bool:
        """A fused ``add`` of a row broadcast over the matrix rows (``f32_bmm_bias``)."""
        return _bias_split(residual, output) is not None

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        a, b, residual = named["input"], named["other"], named.get("residual")
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise CompileError("matmul with a 1-D operand is not lowered; reshape it to 2-D")
        batch = node.output.shape[:-2]
        a_batch, b_batch = a.shape[:-2], b.shape[:-2]
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        shared_b = all(d == 1 for d in b_batch)
        ctx.address(a)
        ctx.address(b)
        if shared_b and residual is None:
            ctx.address(node.output)
            ctx.scratch(node, 0)
            ctx.scratch(node, 1)
            ctx.numel(a.shape[:-1])
            ctx.numel((k,))
            ctx.numel((n,))
            ctx.call("f32_gemm")
            return
        if not shared_b and tuple(b_batch) != tuple(batch) or a_batch and tuple(a_batch) != \
                tuple(batch) and not all(d == 1 for d in a_batch):
            raise CompileError(f"matmul broadcasting {list(a.shape)} @ {list(b.shape)} is "
                               "not lowered")
        split = None if residual is None else _bias_split(residual.shape, node.output.shape)
        if residual is not None:
            if split is None:
                raise CompileError(f"matmul: a fused residual of shape {list(residual.shape)} "
                                   f"onto {list(node.output.shape)} is not a row broadcast")
            ctx.address(residual)
        ctx.address(node.output)
        ctx.numel(batch)
        for dims in ((m,), (k,), (n,)):
            ctx.numel(dims)
        if all(d == 1 for d in a_batch):
            ctx.push(0)
        else:
            ctx.numel((m, k))
        if shared_b:
            ctx.push(0)
        else:
            ctx.numel((k, n))
        if split is not None:
            ctx.numel(batch[split:])  # bias_every: matrices per bias row
            ctx.call("f32_bmm_bias")
        else:
            ctx.call("f32_bmm")


OP = Matmul()
