"""conv2d: 2-D cross-correlation, (N, C, H, W) * (O, C/groups, KH, KW) -> (N, O, OH, OW).

A depthwise conv (``groups == c``) lowers to the ``depthwise`` family (``_depthwise``);
any other to one call of the ABI's ``conv`` family (with its fused epilogue), a zero bias
the weight packed at compile time by ``wasm_kernels.pack.pack_conv_weight``: the kernel
takes any stride, dilation and groups. The
bottom and right padding are implied by the output size, so ``'same'`` padding with an even
kernel (one more row at the end) needs nothing extra.

A 1-D conv laid out tall (width 1, a (kh, 1) kernel) is lowered as the same conv laid out
wide (height 1, a (1, kh) kernel): both are the same bytes, and the kernel's tiles run
along rows, so the tall form ran 6-14x slower (``bench/conv1d.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from nn.functional.conv import conv_padding
from wasm_kernels import abi
from wasm_kernels.pack import pack_conv_weight

from ..errors import CompileError
from . import OpDef, _depthwise
from ._shapes import pair, require_constant_weight, require_static, window_out

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


class Conv2d(OpDef):
    name = "conv2d"
    epilogues = abi.fusable("conv")

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

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        return _depthwise.scratch(node)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = dict(zip(node.input_names, node.inputs))
        x, weight = named["input"], named["weight"]
        require_constant_weight(weight, self.name)
        if _depthwise.lower(node, ctx):
            return
        out_channels, per_group, kh, kw = weight.shape
        stride, dilation = pair(node.attrs.get("stride", 1)), pair(node.attrs.get("dilation", 1))
        (top, _), (left, _) = conv_padding(node.attrs.get("padding", 0), (kh, kw), stride,
                                           dilation)
        groups = node.attrs.get("groups", 1)
        (c, h, w), (oh, ow) = x.shape[1:], node.output.shape[2:]
        data = np.asarray(weight.data, np.float32)
        if w == 1 and kw == 1 and left == 0 and h > 1:
            # NOTE: (..., L, 1) and (..., 1, L) are the same bytes: swap the two axes.
            h, w, oh, ow, kh, kw, top, left = 1, h, 1, oh, 1, kh, 0, top
            stride, dilation = stride[::-1], dilation[::-1]
            data = data.reshape(out_channels, per_group, 1, kw)
        ctx.address(x)
        ctx.constant(pack_conv_weight(data, groups))
        if "bias" in named:
            ctx.address(named["bias"])
        else:
            ctx.constant(np.zeros(out_channels, np.float32))
        if "residual" in named:
            ctx.address(named["residual"])
        ctx.address(node.output)
        ctx.numel(x.shape[:1])
        for number in (c, h, w, out_channels, oh, ow, kh, kw, *stride, top, left, *dilation,
                       groups):
            ctx.push(number)
        ctx.call(abi.find("conv", "conv2d", tuple(node.attrs.get("epilogue", ()))).name)


OP = Conv2d()
