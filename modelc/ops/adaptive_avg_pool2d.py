"""adaptive_avg_pool2d: means over windows chosen to give ``output_size``.

Lowered when the windows are uniform (each output size divides its input size): a global
average is one ``f32_reduce_mean`` over each plane, any other uniform case is an
``avg_pool2d`` with kernel = stride = input // output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CompileError
from . import OpDef
from ._pool import emit_window
from ._shapes import pair, require_static

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class AdaptiveAvgPool2d(OpDef):
    name = "adaptive_avg_pool2d"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        x = shapes[0]
        require_static(x, (len(x) - 2, len(x) - 1), self.name)
        out = tuple(full if size is None else size
                    for size, full in zip(pair(attrs["output_size"]), x[-2:]))
        return [(tuple(x[:-2]) + out, dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        x, out = node.inputs[0].shape, node.output.shape
        (h, w), (oh, ow) = x[-2:], out[-2:]
        if h % oh or w % ow:
            raise CompileError(f"adaptive_avg_pool2d {[h, w]} -> {[oh, ow]} has uneven "
                               "windows; only output sizes that divide the input lower")
        ctx.address(node.inputs[0])
        if (oh, ow) == (1, 1):
            ctx.address(node.output)
            ctx.numel(x[:-2])
            ctx.push(h * w)
            ctx.push(1)
            ctx.call("f32_reduce_mean")
            return
        kernel = (h // oh, w // ow)
        ctx.constant(np.full((oh, ow), 1 / (kernel[0] * kernel[1]), np.float32))
        ctx.address(node.output)
        emit_window(ctx, "f32_avg_pool2d", x, out, (kernel, kernel, (0, 0), (1, 1)))


OP = AdaptiveAvgPool2d()
