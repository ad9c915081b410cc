"""ONNX neural-network ops: activations, softmax, convolutions, normalisations (pooling is
``ops_pool``).

``OPS`` maps an ONNX op type to a function of an ``OnnxNode`` returning its output(s),
written in ``nn.functional`` calls. 1-D convolutions run as 2-D ones over a height-1 image,
3-D ones as ``conv3d`` (a composite of the 2-D one); asymmetric padding becomes an explicit
``pad``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from .fold import is_known, operands
from .node import OnnxNode
from .window import Window, planar, spatial_rank, unplanar

OpFn = Callable[[OnnxNode], Any]


def conv(n: OnnxNode) -> Any:
    spatial = spatial_rank(n)
    x, w, bias = n.input(0), n.input(1), n.optional(2)
    window = Window.of(n, n.attr("kernel_shape") or list(w.shape[2:])).planar()
    x, w = planar(x), planar(w)
    if not window.symmetric:
        x, window.pads = F.pad(x, window.torch_pad()), [(0, 0)] * len(window.pads)
    y = (F.conv3d if spatial == 3 else F.conv2d)(
        x, w, bias, tuple(window.strides), window.padding(), tuple(window.dilations),
        n.attr("group", 1))
    return unplanar(y, spatial)


def conv_transpose(n: OnnxNode) -> Any:
    """ConvTranspose (1-D to 3-D); uneven ``pads`` or ``output_shape`` crop or extend the
    full result. ``auto_pad`` SAME_* asks for ``output_shape`` = input size * stride."""
    spatial = spatial_rank(n)
    x, w, bias = n.input(0), n.input(1), n.optional(2)
    window = Window.of(n, n.attr("kernel_shape") or list(w.shape[2:]))
    extra = list(n.attr("output_padding") or [0] * spatial)
    output_shape = n.attr("output_shape")
    if not output_shape and n.attr("auto_pad") in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [size * s for size, s in zip(x.shape[2:], window.strides)]
    if output_shape:
        window.pads = []
        for i, want in enumerate(output_shape[-spatial:]):
            full = ((x.shape[2 + i] - 1) * window.strides[i] + extra[i]
                    + (window.kernel[i] - 1) * window.dilations[i] + 1)
            total = full - want
            low, high = total // 2, total - total // 2
            window.pads.append((low, high) if n.attr("auto_pad") == "SAME_UPPER"
                               else (high, low))
    window, extra = window.planar(), ([0] + extra if spatial == 1 else extra)
    x, w, groups = planar(x), planar(w), n.attr("group", 1)
    simple = window.symmetric and all(e < max(s, d) for e, s, d in
                                      zip(extra, window.strides, window.dilations))
    transpose = F.conv_transpose3d if spatial == 3 else F.conv_transpose2d
    if simple:
        y = transpose(x, w, bias, tuple(window.strides), window.padding(), tuple(extra),
                      groups, tuple(window.dilations))
    else:
        y = transpose(x, w, None, tuple(window.strides), 0, 0, groups, tuple(window.dilations))
        y = F.pad(y, [a for (low, high), e in reversed(list(zip(window.pads, extra)))
                      for a in (-low, e - high)])  # crop or extend
        if bias is not None:
            y = F.add(y, F.reshape(bias, (1, -1) + (1,) * (len(y.shape) - 2)))
    return unplanar(y, spatial)


def col2im(n: OnnxNode) -> Any:
    """Col2Im (2-D blocks): the (N, C * kH * kW, L) columns summed back into (N, C, H, W) as a
    transposed convolution of the (Lh, Lw) block grid with one-hot (kH, kW) kernels, one
    group per channel, cropped by ``pads``.

    Raises:
        CompileError: image or block shapes computed at run time, or not 2-D.
    """
    x = n.input(0)
    image = [int(v) for v in n.known(1, "image_shape")]
    block = [int(v) for v in n.known(2, "block_shape")]
    if len(image) != 2 or len(block) != 2:
        raise n.error(f"only 2-D Col2Im is supported, got image shape {image}")
    strides = list(n.attr("strides") or [1, 1])
    dilations = list(n.attr("dilations") or [1, 1])
    pads = list(n.attr("pads") or [0, 0, 0, 0])
    grid = [(size + pads[a] + pads[a + 2] - dilations[a] * (k - 1) - 1) // strides[a] + 1
            for a, (size, k) in enumerate(zip(image, block))]
    taps = block[0] * block[1]
    channels = x.shape[1] // taps
    weight = np.tile(np.eye(taps, dtype=np.float32).reshape(taps, 1, *block), (channels, 1, 1, 1))
    planes = F.reshape(x, (x.shape[0], x.shape[1], *grid))  # (N, C*kH*kW, Lh, Lw)
    out = F.conv_transpose2d(planes, weight, None, tuple(strides), 0, 0, channels,
                             tuple(dilations))
    return F.pad(out, [-pads[1], -pads[3], -pads[0], -pads[2]])  # crop the padding


def lrn(n: OnnxNode) -> Any:
    """LRN: ``x / (bias + alpha * mean of x^2 over size channels) ** beta``, the channel
    window being an average pool over a (C, H*W) image."""
    x, size = n.input(0), n.attr("size")
    batch, channels = x.shape[:2]
    squares = F.reshape(F.mul(x, x), (batch, 1, channels, -1))  # (N, 1, C, H*W)
    before = (size - 1) // 2
    window = F.avg_pool2d(F.pad(squares, (0, 0, before, size - 1 - before)), (size, 1), 1)
    scale = F.pow(F.add(F.mul(window, n.attr("alpha", 1e-4)), n.attr("bias", 1.0)),
                  n.attr("beta", 0.75))
    return F.div(x, F.reshape(scale, x.shape))


def batch_normalization(n: OnnxNode) -> Any:
    if n.attr("training_mode", 0) or n.outputs > 1:
        raise n.error("training-mode BatchNormalization is not supported")
    x, scale, bias, mean, var = (n.input(i) for i in range(5))
    eps = n.attr("epsilon", 1e-5)
    if is_known(scale, bias, mean, var):
        return F.batch_norm(x, mean, var, scale, bias, eps=eps)
    # NOTE: statistics computed at run time (tf2onnx's layer norm): the formula, each
    # parameter (C,) broadcast over the axes after the channels.
    def channels(value: Any) -> Any:
        shape = (-1,) + (1,) * (len(x.shape) - 2)
        return value.reshape(shape) if is_known(value) else F.reshape(value, shape)

    scale, bias, mean, var = (channels(v) for v in (scale, bias, mean, var))
    inverse = F.div(*operands(scale, F.sqrt(F.add(var, float(eps)))))
    return F.add(*operands(F.mul(*operands(F.sub(*operands(x, mean)), inverse)), bias))


def layer_normalization(n: OnnxNode) -> Any:
    """LayerNormalization; the optional Mean and InvStdDev outputs (the statistics over the
    normalised axes, kept as size-1 axes) are computed beside it when asked for."""
    x = n.input(0)
    axis, eps = n.axis(n.attr("axis", -1)), n.attr("epsilon", 1e-5)
    shape = tuple(x.shape[axis:])

    def affine(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return np.broadcast_to(value, shape).astype(value.dtype)
        return value

    y = F.layer_norm(x, shape, affine(n.input(1)), affine(n.optional(2)), eps)
    if n.outputs == 1:
        return y
    axes = tuple(range(axis, len(x.shape)))
    mean = F.mean(x, dim=axes, keepdim=True)
    centred = F.sub(x, mean)
    variance = F.mean(F.mul(centred, centred), dim=axes, keepdim=True)
    return y, mean, F.div(1.0, F.sqrt(F.add(variance, eps)))


def lp_normalization(n: OnnxNode) -> Any:
    """LpNormalization: ``x / ||x||_p`` along ``axis`` (p 1 or 2); 0 where the norm is 0,
    as ONNX's reference."""
    x, p = n.input(0), n.attr("p", 2)
    axis = n.axis(n.attr("axis", -1))
    if p not in (1, 2):
        raise n.error(f"p={p} is not supported; expected 1 or 2")
    norm = (F.sum(F.abs(x), dim=(axis,), keepdim=True) if p == 1
            else F.sqrt(F.sum(F.mul(x, x), dim=(axis,), keepdim=True)))
    zero = F.eq(norm, 0.0)
    return F.where(zero, 0.0, F.div(x, F.where(zero, 1.0, norm)))


def instance_normalization(n: OnnxNode) -> Any:
    return F.instance_norm(n.input(0), weight=n.input(1), bias=n.input(2),
                           eps=n.attr("epsilon", 1e-5))


def _softmax(fn: Callable[..., Any]) -> OpFn:
    """Softmax / LogSoftmax / Hardmax; before opset 13 they act on the input flattened to 2-D at
    ``axis`` (default 1), which is a softmax over all trailing axes."""
    def run(n: OnnxNode) -> Any:
        x = n.input(0)
        axis = n.axis(n.attr("axis", -1 if n.opset >= 13 else 1))
        if n.opset >= 13 or axis == n.rank() - 1:
            return fn(x, dim=axis)
        flat = F.reshape(x, (*x.shape[:axis], -1))  # (*leading, prod(trailing))
        return F.reshape(fn(flat, dim=-1), x.shape)
    return run


def _hardmax(x: Any, dim: int) -> Any:
    """1 at the first maximum along ``dim``, 0 elsewhere: the argmax (float32, exact below
    2**24) compared with each position."""
    rank = len(x.shape)
    dim %= rank
    if not isinstance(x.shape[dim], int):
        raise ValueError(f"Hardmax needs a fixed size along axis {dim}, got {x.shape[dim]!r}")
    positions = np.arange(x.shape[dim], dtype=np.float32).reshape(
        [-1 if axis == dim else 1 for axis in range(rank)])
    first = F.cast(F.argmax(x, dim=dim, keepdim=True), np.float32)
    return F.cast(F.eq(first, positions), np.dtype(str(x.dtype)))


def hard_sigmoid(n: OnnxNode) -> Any:
    linear = F.add(F.mul(n.input(0), n.attr("alpha", 0.2)), n.attr("beta", 0.5))
    return F.minimum(F.maximum(linear, 0.0), 1.0)


def prelu(n: OnnxNode) -> Any:
    x = n.input(0)
    return F.add(F.relu(x), F.mul(F.minimum(x, 0.0), n.input(1)))


OPS: dict[str, OpFn] = {
    "Conv": conv, "ConvTranspose": conv_transpose,
    "LRN": lrn, "BatchNormalization": batch_normalization,
    "LayerNormalization": layer_normalization, "LpNormalization": lp_normalization,
    "InstanceNormalization": instance_normalization,
    "Softmax": _softmax(F.softmax), "LogSoftmax": _softmax(F.log_softmax),
    "Hardmax": _softmax(_hardmax),
    "LeakyRelu": lambda n: F.leaky_relu(n.input(0), n.attr("alpha", 0.01)),
    "Gelu": lambda n: F.gelu(n.input(0), n.attr("approximate", "none")),
    "HardSigmoid": hard_sigmoid, "HardSwish": lambda n: F.hardswish(n.input(0)),
    "PRelu": prelu, "Col2Im": col2im,
}
