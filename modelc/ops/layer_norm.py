"""layer_norm: normalise over the trailing ``normalized_shape`` axes, then scale and shift."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import CompileError
from ._families import SameShape

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class LayerNorm(SameShape):
    name = "layer_norm"

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        x, trailing = named["input"], len(tuple(node.attrs["normalized_shape"]))
        features = x.shape[len(x.shape) - trailing:]
        if not all(isinstance(d, int) for d in features):
            raise CompileError(f"layer_norm over symbolic axes {list(features)}")
        n = int(np.prod(features))
        ctx.address(x)
        for name, default in (("weight", 1.0), ("bias", 0.0)):
            if name in named:
                if not named[name].is_constant:
                    raise CompileError(f"layer_norm {name} must be a constant")
                ctx.address(named[name])
            else:
                ctx.constant(np.full(n, default, np.float32))
        ctx.address(node.output)
        ctx.numel(x.shape[:len(x.shape) - trailing])
        ctx.push(n)
        ctx.push_f32(node.attrs.get("eps", 1e-5))
        ctx.call("f32_layer_norm")


OP = LayerNorm()
