"""conv_transpose2d: the gradient of conv2d as a layer; weight (C, O/groups, KH, KW)."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from . import OpDef
from ._shapes import pair, require_static


class ConvTranspose2d(OpDef):
    name = "conv_transpose2d"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        x, w = shapes[0], shapes[1]
        if len(x) != 4 or len(w) != 4:
            raise CompileError(f"conv_transpose2d expects 4-D input and weight, got "
                               f"{list(x)}, {list(w)}")
        require_static(x, (1, 2, 3), "conv_transpose2d")
        groups = attrs.get("groups", 1)
        if x[1] != w[0]:
            raise CompileError(f"conv_transpose2d: input has {x[1]} channels, weight "
                               f"{list(w)} expects {w[0]}")
        stride, pad = pair(attrs.get("stride", 1)), pair(attrs.get("padding", 0))
        extra, dilation = pair(attrs.get("output_padding", 0)), pair(attrs.get("dilation", 1))
        out = tuple((x[2 + i] - 1) * stride[i] - 2 * pad[i] + dilation[i] * (w[2 + i] - 1)
                    + extra[i] + 1 for i in range(2))
        return [((x[0], w[1] * groups) + out, dtypes[0])]


OP = ConvTranspose2d()
