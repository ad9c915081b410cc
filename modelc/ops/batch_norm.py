"""batch_norm: inference normalisation with running statistics, then scale and shift per
channel.

After a conv2d or linear it is folded away (``fold_batchnorm``). Elsewhere it is the
per-channel affine map ``x * scale + shift``, with both vectors computed here from the
constant statistics: two calls of the broadcasting ``f32_mul`` and ``f32_add``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import CompileError
from ._families import SameShape
from ._strided import emit_strided, operand_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class BatchNorm(SameShape):
    name = "batch_norm"

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        x, out = named["input"], node.output
        if node.attrs.get("training"):
            raise CompileError("batch_norm in training mode is not lowered; call eval()")
        if not all(v.is_constant for n, v in named.items() if n != "input") \
                or "running_mean" not in named or "running_var" not in named:
            raise CompileError("batch_norm lowers with constant running statistics, weight "
                               f"and bias; got inputs {list(named)}")
        stats = {n: v.data.astype(np.float64) for n, v in named.items() if n != "input"}
        channels = stats["running_mean"].shape[0]
        scale = (stats.get("weight", np.ones(channels))
                 / np.sqrt(stats["running_var"] + node.attrs.get("eps", 1e-5)))
        shift = stats.get("bias", np.zeros(channels)) - stats["running_mean"] * scale
        rank = len(x.shape)
        per_channel = (channels,) + (1,) * (rank - 2)  # (C, 1, ...) against (N, C, ...)
        for kernel, source, vector in (("f32_mul", x, scale), ("f32_add", out, shift)):
            ctx.address(source)
            ctx.constant(vector.astype(np.float32))
            ctx.address(out)
            emit_strided(ctx, kernel, out.shape, [operand_strides(source.shape, rank),
                                                  operand_strides(per_channel, rank)])


OP = BatchNorm()
