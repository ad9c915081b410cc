"""conv2d: 2-D cross-correlation, (N, C, H, W) * (O, C/groups, KH, KW) -> (N, O, OH, OW).

A depthwise conv (``groups == c``) lowers to the ``depthwise`` family (``_depthwise``);
any other to one call of the ABI's ``conv`` family (the direct kernel, weight packed by
``wasm_kernels.pack.pack_conv_weight``) or ``conv_gemm`` family (im2col into the node's
scratch and the dense tile, weight packed by ``pack_im2col.pack_im2col_weight``), whichever
``pack_im2col.runs_as_gemm`` says is faster for the shape (``f32_conv2d_im2col`` when
``pack_im2col.packs``: the gemm without its in-place paths), with its fused epilogue and a zero
bias if there is none: both take any stride, dilation and groups. A dense conv with a
window on a small plane runs as the transposed product instead, its pixels as the rows of
the ``linear`` tile (``_conv_rows``). The
bottom and right padding are implied by the output size, so ``'same'`` padding with an even
kernel (one more row at the end) needs nothing extra.

A 1-D conv laid out tall (width 1, a (kh, 1) kernel) is lowered as the same conv laid out
wide (height 1, a (1, kh) kernel): both are the same bytes, and the kernel's tiles run
along rows, so the tall form ran 6-14x slower (``bench/conv1d.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nn.functional.conv import conv_padding
from wasm_kernels import abi
from wasm_kernels.pack import pack_conv_weight
from wasm_kernels.pack_im2col import (
    columns_per_chunk,
    pack_im2col_weight,
    packs,
    padded_floats,
    runs_as_gemm,
    scratch_floats,
)

from ..errors import CompileError
from . import OpDef, _conv_rows, _depthwise
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
        """The packed columns and the padded input of a conv run as a gemm
        (``pack_im2col``), or the depthwise kernel's."""
        depthwise = _depthwise.scratch(node)
        if depthwise:
            return depthwise
        g = _Geometry.of(node)
        if g.transposed:
            return _conv_rows.scratch(node.inputs[0].shape[:1], g.c * g.h * g.w, (g.oh, g.ow),
                                      g.steps, g.data.shape[0], "residual" in node.named_inputs())
        if not g.as_gemm:
            return ()
        o, cg, kh, kw = g.data.shape
        padded = padded_floats(cg, (g.h, g.w), (g.oh, g.ow), (kh, kw), g.stride, g.pad,
                               g.dilation)
        # NOTE: a thread's part of the pixels packs at its place for all c input channels
        # (``wasm_kernels.parallel``: a grouped 1x1 conv splits too), not c / groups
        return (scratch_floats(g.steps * g.groups, g.oh * g.ow),), (max(padded, 1),)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        require_constant_weight(named["weight"], self.name)
        if _depthwise.lower(node, ctx):
            return
        g = _Geometry.of(node)
        if g.transposed:
            _conv_rows.lower(node, ctx, g.data, g.numbers())
            return
        ctx.address(named["input"])
        ctx.constant((pack_im2col_weight if g.as_gemm else pack_conv_weight)(g.data, g.groups))
        if "bias" in named:
            ctx.address(named["bias"])
        else:
            ctx.constant(np.zeros(g.data.shape[0], np.float32))
        if "residual" in named:
            ctx.address(named["residual"])
        if g.as_gemm:
            ctx.scratch(node, 0)
            ctx.scratch(node, 1)
        ctx.address(node.output)
        ctx.numel(named["input"].shape[:1])
        for number in g.numbers():
            ctx.push(number)
        if g.as_gemm:
            for number in (g.columns, g.oh * g.ow, 0):  # columns, pixels, first_bytes
                ctx.push(number)
        family, op = ("conv", "conv2d")
        if g.as_gemm:
            family, op = "conv_gemm", "conv2d_im2col" if g.packs else "conv2d_gemm"
        ctx.call(abi.find(family, op, tuple(node.attrs.get("epilogue", ()))).name)


def kernel_path(node: Node) -> str:
    """Which kernel runs a conv2d node: ``depthwise``, ``rows`` (the transposed product,
    ``_conv_rows``), ``direct`` (``f32_conv2d``), ``f32_conv2d_gemm`` as ``pointwise`` (a
    1x1 without padding, its input read in place, subsampled first at a larger stride) or
    ``taps`` (reading its input in place, ``pack_im2col.taps``), or ``gemm``
    (``f32_conv2d_im2col``, packing it)."""
    if _depthwise.scratch(node):
        return "depthwise"
    g = _Geometry.of(node)
    if g.transposed:
        return "rows"
    if not g.as_gemm:
        return "direct"
    if g.packs:
        return "gemm"
    return "pointwise" if g.data.shape[2:] == (1, 1) and g.pad == (0, 0) else "taps"


@dataclass(frozen=True)
class _Geometry:
    """A conv node's sizes as its kernel takes them, and which kernel runs it."""

    data: np.ndarray
    """The weight (o, c / groups, kh, kw), float32."""
    c: int
    h: int
    w: int
    oh: int
    ow: int
    stride: tuple[int, int]
    pad: tuple[int, int]
    dilation: tuple[int, int]
    groups: int

    @classmethod
    def of(cls, node: Node) -> _Geometry:
        weight = node.named_inputs()["weight"]
        out_channels, per_group, kh, kw = weight.shape
        stride, dilation = pair(node.attrs.get("stride", 1)), pair(node.attrs.get("dilation", 1))
        (top, _), (left, _) = conv_padding(node.attrs.get("padding", 0), (kh, kw), stride,
                                           dilation)
        (c, h, w), (oh, ow) = node.inputs[0].shape[1:], node.output.shape[2:]
        data = np.asarray(weight.data, np.float32)
        if w == 1 and kw == 1 and left == 0 and h > 1:
            # NOTE: (..., L, 1) and (..., 1, L) are the same bytes: swap the two axes.
            h, w, oh, ow, top, left = 1, h, 1, oh, 0, top
            stride, dilation = stride[::-1], dilation[::-1]
            data = data.reshape(out_channels, per_group, 1, kh)
        return cls(data, c, h, w, oh, ow, stride, (top, left), dilation,
                   node.attrs.get("groups", 1))

    @property
    def as_gemm(self) -> bool:
        o, cg, kh, kw = self.data.shape
        return runs_as_gemm(cg, o // self.groups, (kh, kw), self.stride, (self.oh, self.ow),
                            self.dilation, self.pad != (0, 0))

    @property
    def packs(self) -> bool:
        """Whether it runs as ``f32_conv2d_im2col`` (``pack_im2col.packs``), when a gemm."""
        o, cg, kh, kw = self.data.shape
        return packs(cg, o // self.groups, (kh, kw), self.stride, (self.oh, self.ow),
                     self.dilation, self.pad != (0, 0))

    @property
    def transposed(self) -> bool:
        """Whether it runs as the transposed product (``_conv_rows``)."""
        o, cg, kh, kw = self.data.shape
        return _conv_rows.runs_transposed(cg, o, (kh, kw), (self.oh, self.ow), self.groups)

    @property
    def steps(self) -> int:
        """K of the gemm: c / groups * kh * kw."""
        return int(np.prod(self.data.shape[1:]))

    @property
    def columns(self) -> int:
        return columns_per_chunk(self.steps, self.oh * self.ow, self.data.shape[0] // self.groups)

    def numbers(self) -> tuple[int, ...]:
        """The kernel's size arguments after ``n``: c, h, w, o, oh, ow, kh, kw, sh, sw, ph,
        pw, dh, dw, groups."""
        o, _, kh, kw = self.data.shape
        return (self.c, self.h, self.w, o, self.oh, self.ow, kh, kw, *self.stride, *self.pad,
                *self.dilation, self.groups)


OP = Conv2d()
