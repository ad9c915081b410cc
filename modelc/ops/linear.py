"""linear: ``input @ weight.T + bias`` lowered to one gemm with a fused epilogue.

The weight is packed at compile time to (in, out) row-major so the gemm streams its rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CompileError
from . import OpDef

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


class Linear(OpDef):
    name = "linear"
    epilogues = frozenset({"relu"})

    def infer(self, shapes: list["Shape"], dtypes: list[str],
              attrs: dict[str, Any]) -> list[tuple["Shape", str]]:
        x, weight = shapes[0], shapes[1]
        if len(x) < 1 or len(weight) != 2:
            raise CompileError(f"linear expects input (..., in) and weight (out, in), "
                               f"got {list(x)} and {list(weight)}")
        if x[-1] != weight[1]:
            raise CompileError(f"linear: input has {x[-1]} features but weight expects "
                               f"{weight[1]} (weight shape {list(weight)})")
        if len(shapes) == 3 and tuple(shapes[2]) != (weight[0],):
            raise CompileError(f"linear: bias shape {list(shapes[2])} does not match "
                               f"out_features {weight[0]}")
        if any(d != "float32" for d in dtypes):
            raise CompileError(f"linear supports float32 only, got {dtypes}")
        return [(tuple(x[:-1]) + (weight[0],), "float32")]

    def lower(self, node: "Node", ctx: "LowerContext") -> None:
        x, weight, *bias = node.inputs
        if not weight.is_constant:
            raise CompileError("linear with a weight computed at run time is not supported; "
                               "the weight must be a parameter or constant")
        out_features, in_features = weight.shape
        epilogue = node.attrs.get("epilogue", ())
        ctx.address(x)
        ctx.constant(np.ascontiguousarray(weight.data.T, dtype=np.float32))
        if bias:
            ctx.address(bias[0])
        ctx.address(node.output)
        ctx.numel(x.shape[:-1])
        ctx.push(in_features)
        ctx.push(out_features)
        ctx.call("_".join(("f32_gemm",) + (("bias",) if bias else ()) + tuple(epilogue)))


OP = Linear()
