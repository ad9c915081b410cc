"""The depthwise form of conv2d: a conv with one input channel per group (``groups == c``,
``o / c`` output channels each) lowers to the ``depthwise`` family, which pads each input
plane once into a scratch plane and runs unmasked register tiles over it, with its bias
and activation fused; a fused residual ``add`` stays on the general conv kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nn.functional.conv import conv_padding
from wasm_kernels import abi

from ._shapes import pair

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


def _kernel(node: Node) -> abi.KernelSpec | None:
    """The depthwise kernel of ``node`` (a conv2d), or None when it is not depthwise or its
    epilogue has no depthwise row."""
    x, weight = node.inputs[0], node.inputs[1]
    groups = node.attrs.get("groups", 1)
    if groups != x.shape[1] or weight.shape[1] != 1 or weight.shape[0] % groups:
        return None
    epilogue = tuple(node.attrs.get("epilogue", ()))
    return abi.BY_OP.get(("depthwise", "depthwise_conv2d", epilogue, "float32"))


def _geometry(node: Node) -> tuple[int, ...]:
    """(n, c, o, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw) of a depthwise conv2d."""
    x, weight = node.inputs[0], node.inputs[1]
    kh, kw = weight.shape[2:]
    stride, dilation = pair(node.attrs.get("stride", 1)), pair(node.attrs.get("dilation", 1))
    (top, _), (left, _) = conv_padding(node.attrs.get("padding", 0), (kh, kw), stride,
                                       dilation)
    return (*x.shape[:2], weight.shape[0], *x.shape[2:], *node.output.shape[2:], kh, kw,
            *stride, top, left, *dilation)


def scratch(node: Node) -> tuple[Shape, ...]:
    """The padded plane a depthwise conv2d's kernel needs (none for another conv)."""
    if _kernel(node) is None:
        return ()
    _, _, _, *sizes = _geometry(node)
    return ((abi.depthwise_scratch_floats(*sizes),),)


def lower(node: Node, ctx: LowerContext) -> bool:
    """Emit ``node`` (a conv2d with a constant weight) as one depthwise kernel call; False
    (nothing emitted) when it is not a depthwise conv with a depthwise row."""
    spec = _kernel(node)
    if spec is None:
        return False
    named = dict(zip(node.input_names, node.inputs))
    weight = named["weight"]
    ctx.address(node.inputs[0])
    ctx.constant(np.ascontiguousarray(weight.data, np.float32))
    if "bias" in named:
        ctx.address(named["bias"])
    else:
        ctx.constant(np.zeros(weight.shape[0], np.float32))
    ctx.scratch(node)
    ctx.address(node.output)
    n, *sizes = _geometry(node)
    ctx.numel((n,))
    for number in sizes:
        ctx.push(number)
    ctx.call(spec.name)
    return True
