"""conv_transpose2d: the gradient of conv2d as a layer; weight (C, O/groups, KH, KW).

Lowered to one ``f32_conv_transpose2d`` call (a zero bias when there is none), with the
weight packed at compile time by ``wasm_kernels.pack.pack_conv_transpose_weight``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from wasm_kernels.pack import pack_conv_transpose_weight

from ..errors import CompileError
from . import OpDef
from ._shapes import pair, require_constant_weight, require_static

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


def _geometry(attrs: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """(stride, padding, output_padding, dilation) of a node's attrs."""
    return tuple(pair(attrs.get(name, default)) for name, default in
                 (("stride", 1), ("padding", 0), ("output_padding", 0), ("dilation", 1)))


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
        if groups < 1 or w[0] % groups:
            raise CompileError(f"conv_transpose2d: groups={groups} must be positive and "
                               f"divide the {w[0]} input channels")
        stride, pad, extra, dilation = _geometry(attrs)
        for i, axis in enumerate("HW"):
            if stride[i] < 1 or dilation[i] < 1 or pad[i] < 0:
                raise CompileError(f"conv_transpose2d: stride {stride} and dilation "
                                   f"{dilation} must be positive, padding {pad} non-negative")
            if not 0 <= extra[i] < max(stride[i], dilation[i]):
                raise CompileError(f"conv_transpose2d: output_padding {extra} must be "
                                   f"smaller than either stride {stride} or dilation "
                                   f"{dilation} (axis {axis})")
        out = tuple((x[2 + i] - 1) * stride[i] - 2 * pad[i] + dilation[i] * (w[2 + i] - 1)
                    + extra[i] + 1 for i in range(2))
        if min(out) < 1:
            raise CompileError(f"conv_transpose2d: padding {pad} leaves an empty output "
                               f"{list(out)} for input {list(x)} and weight {list(w)}")
        return [((x[0], w[1] * groups) + out, dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        x, weight = named["input"], named["weight"]
        require_constant_weight(weight, self.name)
        if x.dtype != "float32":
            raise CompileError(f"conv_transpose2d: only float32 lowers to wasm, got {x.dtype}")
        groups = node.attrs.get("groups", 1)
        _, _, kh, kw = weight.shape
        out_channels, oh, ow = node.output.shape[1:]
        stride, pad, _, dilation = _geometry(node.attrs)
        ctx.address(x)
        ctx.constant(pack_conv_transpose_weight(weight.data, groups))
        if "bias" in named:
            ctx.address(named["bias"])
        else:
            ctx.constant(np.zeros(int(out_channels), np.float32))
        ctx.address(node.output)
        ctx.numel(x.shape[:1])
        for number in (*x.shape[1:], out_channels, oh, ow, kh, kw, *stride, *pad, *dilation,
                       groups):
            ctx.push(number)
        ctx.call("f32_conv_transpose2d")


OP = ConvTranspose2d()
