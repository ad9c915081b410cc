"""conv2d: 2-D cross-correlation, (N, C, H, W) * (O, C/groups, KH, KW) -> (N, O, OH, OW)."""

from __future__ import annotations

from typing import Any

from nn.functional.conv import conv_padding

from ..errors import CompileError
from . import OpDef
from ._shapes import pair, require_static, window_out


class Conv2d(OpDef):
    name = "conv2d"
    epilogues = frozenset({"relu"})

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        x, w = shapes[0], shapes[1]
        if len(x) != 4 or len(w) != 4:
            raise CompileError(f"conv2d expects 4-D input and weight, got {list(x)}, {list(w)}")
        require_static(x, (1, 2, 3), "conv2d")
        groups = attrs.get("groups", 1)
        if x[1] != w[1] * groups:
            raise CompileError(f"conv2d: input has {x[1]} channels, weight {list(w)} with "
                               f"groups={groups} expects {w[1] * groups}")
        stride, dilation = pair(attrs.get("stride", 1)), pair(attrs.get("dilation", 1))
        pads = conv_padding(attrs.get("padding", 0), (w[2], w[3]), stride, dilation)
        out = tuple(window_out(x[2 + i], w[2 + i], stride[i], sum(pads[i]), dilation[i])
                    for i in range(2))
        return [((x[0], w[0]) + out, dtypes[0])]


OP = Conv2d()
