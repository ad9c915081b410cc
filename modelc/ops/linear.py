"""linear: ``input @ weight.T + bias`` lowered to one gemm with a fused epilogue.

The weight is packed at compile time by ``wasm_kernels.pack.pack_linear_weight`` for the
``f32_linear`` outer-product tile, which also packs the input's rows into a scratch of the
input's shape at run time. The epilogue may hold a residual ``add`` (an extra
``residual`` input) and then one activation, as the ``linear`` family of the kernel ABI
computes them (``wasm_kernels.abi.fusable``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from wasm_kernels import abi
from wasm_kernels.pack import pack_linear_weight

from ..errors import CompileError
from . import OpDef
from ._shapes import require_constant_weight

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


class Linear(OpDef):
    name = "linear"
    epilogues = abi.fusable("linear")

    def infer(self, shapes: list[Shape], dtypes: list[str],
              attrs: dict[str, Any]) -> list[tuple[Shape, str]]:
        x, weight = shapes[0], shapes[1]
        if len(x) < 1 or len(weight) != 2:
            raise CompileError(f"linear expects input (..., in) and weight (out, in), "
                               f"got {list(x)} and {list(weight)}")
        if x[-1] != weight[1]:
            raise CompileError(f"linear: input has {x[-1]} features but weight expects "
                               f"{weight[1]} (weight shape {list(weight)})")
        if len(shapes) >= 3 and tuple(shapes[2]) != (weight[0],):
            raise CompileError(f"linear: bias shape {list(shapes[2])} does not match "
                               f"out_features {weight[0]}")
        if any(d != "float32" for d in dtypes):
            raise CompileError(f"linear supports float32 only, got {dtypes}")
        return [(tuple(x[:-1]) + (weight[0],), "float32")]

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        """The input's rows packed for the kernel (``f32_linear``'s ``wa``)."""
        return (tuple(node.inputs[0].shape),)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        x, weight = named["input"], named["weight"]
        require_constant_weight(weight, self.name)
        out_features, in_features = weight.shape
        ctx.address(x)
        ctx.constant(pack_linear_weight(np.asarray(weight.data, dtype=np.float32)))
        for name in ("bias", "residual"):
            if name in named:
                ctx.address(named[name])
        ctx.address(node.output)
        ctx.scratch(node)
        ctx.numel(x.shape[:-1])
        ctx.push(in_features)
        ctx.push(out_features)
        bias = ("bias",) if "bias" in named else ()
        ctx.call(abi.find("linear", "linear", bias + tuple(node.attrs.get("epilogue", ()))).name)


OP = Linear()
