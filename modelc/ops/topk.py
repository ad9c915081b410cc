"""topk: the ``k`` largest (or smallest) entries along ``dim``, sorted, and their int64
indices; lowered to ``<dtype>_topk`` (float32, int32 or int64) over (outer, n, inner) with
the axis in the middle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi

from ..errors import CompileError
from . import OpDef
from ._shapes import axis

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class TopK(OpDef):
    name = "topk"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = shapes[0]
        dim, k = axis(attrs.get("dim", -1), len(shape)), attrs["k"]
        if dtypes[0] not in abi.TOPK_TYPES:
            raise CompileError(f"topk expects one of {list(abi.TOPK_TYPES)}, got {dtypes[0]}")
        if not isinstance(shape[dim], int) or not 0 <= k <= shape[dim]:
            raise CompileError(f"topk: k={k} must be in [0, {shape[dim]!r}], the fixed size "
                               f"of dim {dim}")
        out = shape[:dim] + (k,) + shape[dim + 1:]
        return [(out, dtypes[0]), (out, "int64")]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source = node.inputs[0]
        shape = source.shape
        dim = axis(node.attrs.get("dim", -1), len(shape))
        ctx.address(source)
        ctx.address(node.outputs[0])
        ctx.address(node.outputs[1])
        ctx.numel(shape[:dim])
        ctx.numel(shape[dim:dim + 1])
        ctx.numel(shape[dim + 1:])
        ctx.push(node.attrs["k"])
        ctx.push(int(node.attrs.get("largest", True)))
        ctx.call(abi.find("topk", "topk", dtype=source.dtype).name)


OP = TopK()
