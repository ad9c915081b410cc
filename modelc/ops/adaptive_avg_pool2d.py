"""adaptive_avg_pool2d: means over windows chosen to give ``output_size``.

A global average is one ``f32_reduce_mean`` over each plane; any other output size, even or
not, is one ``f32_adaptive_avg_pool2d``, which follows torch's window rule
(start = floor(i * H / OH), end = ceil((i + 1) * H / OH)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._shapes import pair, require_static

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class AdaptiveAvgPool2d(OpDef):
    name = "adaptive_avg_pool2d"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        x = shapes[0]
        if len(x) < 2:
            raise CompileError(f"{self.name} expects (..., H, W), got {list(x)}")
        require_static(x, (len(x) - 2, len(x) - 1), self.name)
        out = tuple(full if size is None else size
                    for size, full in zip(pair(attrs["output_size"]), x[-2:]))
        if any(not isinstance(size, int) or size < 1 for size in out):
            raise CompileError(f"{self.name}: output_size {attrs['output_size']!r} must be "
                               "positive ints (or None to keep the input size)")
        return [(tuple(x[:-2]) + out, dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        x, out = node.inputs[0], node.output
        if x.dtype != "float32":
            raise CompileError(f"{self.name}: only float32 lowers to wasm, got {x.dtype}")
        # NOTE: infer requires static sizes for the last two axes
        h, w, oh, ow = (int(d) for d in (*x.shape[-2:], *out.shape[-2:]))
        ctx.address(x)
        ctx.address(out)
        ctx.numel(x.shape[:-2])
        if (oh, ow) == (1, 1):
            for number in (h * w, 1):
                ctx.push(number)
            ctx.call("f32_reduce_mean")
            return
        for number in (h, w, oh, ow):
            ctx.push(number)
        ctx.call("f32_adaptive_avg_pool2d")


OP = AdaptiveAvgPool2d()
