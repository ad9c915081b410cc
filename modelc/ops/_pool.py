"""The pooling family: windows over the last two axes of (N, C, H, W)."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from . import OpDef
from ._shapes import pair, require_static, window_out


class Pool2d(OpDef):
    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        x = shapes[0]
        if len(x) != 4:
            raise CompileError(f"{self.name} expects (N, C, H, W), got {list(x)}")
        require_static(x, (2, 3), self.name)
        kernel = pair(attrs["kernel_size"])
        stride_attr = attrs.get("stride")
        stride = pair(kernel if stride_attr in (None, (), []) else stride_attr)
        pad, dilation = pair(attrs.get("padding", 0)), pair(attrs.get("dilation", 1))
        ceil_mode = attrs.get("ceil_mode", False)
        out = tuple(window_out(x[2 + i], kernel[i], stride[i], 2 * pad[i], dilation[i],
                               ceil_mode) for i in range(2))
        return [(tuple(x[:2]) + out, dtypes[0])]
