"""pad: pad (or crop, for negative amounts) the last ``len(pad) // 2`` axes, last first.

Constant padding is lowered to a fill of the output with ``value`` and one strided copy of
the (cropped) input into its region.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._movement import copy_region, fill, require_float
from ._shapes import require_static
from ._strided import dense_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Pad(OpDef):
    name = "pad"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape, amounts = list(shapes[0]), list(attrs["pad"])
        if len(amounts) % 2 or len(amounts) // 2 > len(shape):
            raise CompileError(f"pad: {amounts} must hold pairs for at most {len(shape)} axes")
        for i in range(len(amounts) // 2):
            dim = len(shape) - 1 - i
            require_static(tuple(shape), (dim,), self.name)
            shape[dim] += amounts[2 * i] + amounts[2 * i + 1]
        return [(tuple(shape), dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source, out = node.inputs[0], node.output
        require_float(self.name, source, out)
        if node.attrs.get("mode", "constant") != "constant":
            raise CompileError(f"pad mode {node.attrs['mode']!r} is not lowered; only "
                               "'constant' is")
        amounts = list(node.attrs["pad"])
        region, source_at, target_at = list(source.shape), 0, 0
        source_strides, target_strides = dense_strides(source.shape), dense_strides(out.shape)
        for i in range(len(amounts) // 2):
            dim = len(region) - 1 - i
            before, after = amounts[2 * i], amounts[2 * i + 1]
            region[dim] += min(before, 0) + min(after, 0)
            # NOTE: padded axes are the last ones, so their strides are plain ints.
            source_at += max(-before, 0) * math.prod(source_strides[dim])
            target_at += max(before, 0) * math.prod(target_strides[dim])
        fill(ctx, out, node.attrs.get("value", 0.0))
        if all(isinstance(d, str) or d > 0 for d in region):
            copy_region(ctx, region, source, (source_at,), source_strides, out, (target_at,))


OP = Pad()
