"""cast: elementwise conversion to ``dtype``.

Lowered for int64 -> float32 (token ids), float32 -> int64 (truncating), bool -> float32 and
int64 -> bool (masks) by the cast kernels, and float32 -> float32 as a copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CompileError
from . import OpDef
from ._strided import copy, dense_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node

KERNELS: dict[tuple[str, str], str] = {
    ("int64", "float32"): "i64_to_f32",
    ("float32", "int64"): "f32_to_i64",
    ("bool", "float32"): "bool_to_f32",
    ("int64", "bool"): "i64_to_bool",
}


class Cast(OpDef):
    name = "cast"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        return [(shapes[0], str(np.dtype(attrs["dtype"])))]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source, target = node.inputs[0], node.output
        if source.dtype == target.dtype == "float32":
            copy(ctx, source, target, dense_strides(target.shape))
            return
        kernel = KERNELS.get((source.dtype, target.dtype))
        if kernel is None:
            raise CompileError(f"cast {source.dtype} -> {target.dtype} is not lowered; "
                               f"available: {sorted(f'{a} -> {b}' for a, b in KERNELS)}")
        ctx.address(source)
        ctx.address(target)
        ctx.numel(source.shape)
        ctx.call(kernel)


OP = Cast()
