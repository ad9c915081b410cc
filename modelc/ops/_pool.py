"""The pooling family: windows over the last two axes of (N, C, H, W), lowered to the
``f32_<op>`` window kernels over N * C planes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from nn.functional.conv import conv_padding

from ..errors import CompileError
from . import OpDef
from ._shapes import pair, require_static, window_out

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


def window(attrs: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """(kernel, stride, padding, dilation) from a pooling node's attrs; the stride defaults
    to the kernel, the padding is the top and left one (``pads``)."""
    kernel, stride, dilation = _sizes(attrs)
    (top, _), (left, _) = pads(attrs)
    return kernel, stride, (top, left), dilation


def pads(attrs: dict[str, Any]) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, bottom), (left, right)): an int or pair pads both ends, max_pool2d's
    ``'same'`` an even window's extra row / column at the end only (the kernels clip the
    windows that run past the input, as in ceil mode)."""
    kernel, stride, dilation = _sizes(attrs)
    return conv_padding(attrs.get("padding", 0), kernel, stride, dilation)


def _sizes(attrs: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    kernel = pair(attrs["kernel_size"])
    stride_attr = attrs.get("stride")
    stride = pair(kernel if stride_attr in (None, (), []) else stride_attr)
    return kernel, stride, pair(attrs.get("dilation", 1))


def emit_window(ctx: LowerContext, kernel: str, shape: Shape, out: Shape,
                geometry: tuple[tuple[int, int], ...]) -> None:
    """Push planes (every axis before the last two), the sizes and the window of
    ``geometry``; call ``kernel`` (the operands' addresses are already pushed)."""
    ctx.numel(shape[:-2])
    for number in (*shape[-2:], *out[-2:], *(n for pair_ in geometry for n in pair_)):
        ctx.push(number)
    ctx.call(kernel)


class Pool2d(OpDef):
    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        x = shapes[0]
        if len(x) != 4:
            raise CompileError(f"{self.name} expects (N, C, H, W), got {list(x)}")
        require_static(x, (2, 3), self.name)
        kernel, stride, _, dilation = window(attrs)
        ceil_mode = attrs.get("ceil_mode", False)
        out = tuple(window_out(x[2 + i], kernel[i], stride[i], sum(pads(attrs)[i]),
                               dilation[i], ceil_mode) for i in range(2))
        return [(tuple(x[:2]) + out, dtypes[0])]

    def scale(self, node: Node) -> np.ndarray | None:
        """The per-output multiplier of the window sums, or None for a max."""
        return None

    def lower(self, node: Node, ctx: LowerContext) -> None:
        x = node.inputs[0]
        if x.dtype != "float32":
            raise CompileError(f"{self.name}: only float32 lowers to wasm, got {x.dtype}")
        ctx.address(x)
        scale = self.scale(node)
        if scale is not None:
            ctx.constant(scale.astype(np.float32))
        ctx.address(node.output)
        emit_window(ctx, f"f32_{self.name}", x.shape, node.output.shape, window(node.attrs))
