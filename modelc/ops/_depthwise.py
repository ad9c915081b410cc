"""The depthwise form of conv2d: a conv with one input channel per group (``groups == c``,
``o / c`` output channels each) lowers to the ``depthwise`` family, which pads each input
plane once into a scratch plane and runs unmasked register tiles over it, with its bias
and activation fused; a fused residual ``add`` stays on the general conv kernel. ``qconv2d``
calls it too (``call``), or its quantized rows."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from nn.functional.conv import conv_padding
from wasm_kernels import abi

from ._shapes import pair

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape, Value

Push = Callable[[], None]
"""Pushes one address (``partial(ctx.address, value)``, ``partial(ctx.scratch, node, i)``)."""


def spec(x: Value, weight: Value, groups: int, epilogue: tuple[str, ...]
         ) -> abi.KernelSpec | None:
    """The depthwise kernel of a conv of ``x`` by ``weight`` (o, c / groups, kh, kw) with
    ``epilogue`` fused, or None when the conv is not depthwise or has no such row."""
    if groups != x.shape[1] or weight.shape[1] != 1 or weight.shape[0] % groups:
        return None
    return abi.BY_OP.get(("depthwise", "depthwise_conv2d", epilogue, "float32"))


def geometry(node: Node, x: Value, weight: Value) -> tuple[int, ...]:
    """(n, c, o, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw) of ``node``, a depthwise conv
    of ``x`` by ``weight``."""
    kh, kw = weight.shape[2:]
    stride, dilation = pair(node.attrs.get("stride", 1)), pair(node.attrs.get("dilation", 1))
    (top, _), (left, _) = conv_padding(node.attrs.get("padding", 0), (kh, kw), stride,
                                       dilation)
    return (*x.shape[:2], weight.shape[0], *x.shape[2:], *node.output.shape[2:], kh, kw,
            *stride, top, left, *dilation)


def scratch_floats(sizes: tuple[int, ...]) -> int:
    """The scratch floats of a depthwise conv of ``geometry`` ``sizes``."""
    return abi.depthwise_scratch_floats(*sizes[3:])


def call(ctx: LowerContext, kernel: abi.KernelSpec, sizes: tuple[int, ...],
         weight: np.ndarray, operands: dict[str, Push]) -> None:
    """Call ``kernel`` on ``geometry`` ``sizes`` with the constant ``weight`` (o, 1, kh, kw)
    and ``operands`` pushing the addresses of its other pointer parameters, by name."""
    pointers = kernel.params[:-len(sizes)]
    for name in pointers:
        if name == "weight":
            ctx.constant(np.ascontiguousarray(weight, np.float32))
        else:
            operands[name]()
    n, *rest = sizes
    ctx.numel((n,))
    for number in rest:
        ctx.push(number)
    ctx.call(kernel.name)


def _kernel(node: Node) -> abi.KernelSpec | None:
    """The depthwise kernel of ``node`` (a conv2d), or None when it is not depthwise or its
    epilogue has no depthwise row."""
    return spec(node.inputs[0], node.inputs[1], node.attrs.get("groups", 1),
                tuple(node.attrs.get("epilogue", ())))


def scratch(node: Node) -> tuple[Shape, ...]:
    """The padded plane a depthwise conv2d's kernel needs (none for another conv)."""
    if _kernel(node) is None:
        return ()
    return ((scratch_floats(geometry(node, node.inputs[0], node.inputs[1])),),)


def lower(node: Node, ctx: LowerContext) -> bool:
    """Emit ``node`` (a conv2d with a constant weight) as one depthwise kernel call; False
    (nothing emitted) when it is not a depthwise conv with a depthwise row."""
    kernel = _kernel(node)
    if kernel is None:
        return False
    named = node.named_inputs()
    weight = named["weight"]
    bias = (partial(ctx.address, named["bias"]) if "bias" in named
            else partial(ctx.constant, np.zeros(weight.shape[0], np.float32)))
    call(ctx, kernel, geometry(node, node.inputs[0], weight), weight.data,
         {"x": partial(ctx.address, node.inputs[0]), "bias": bias,
          "scratch": partial(ctx.scratch, node), "y": partial(ctx.address, node.output)})
    return True
