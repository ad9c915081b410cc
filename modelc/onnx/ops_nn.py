"""ONNX neural-network ops: activations, softmax, convolutions, pooling, normalisations.

``OPS`` maps an ONNX op type to a function of an ``OnnxNode`` returning its output(s),
written in ``nn.functional`` calls. 1-D convolutions and pools run as 2-D ones over a
height-1 image, 3-D ones as ``conv3d`` / ``*_pool3d`` (composites of the 2-D ones);
asymmetric padding becomes an explicit ``pad``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nn import functional as F

from .fold import is_known, operands
from .node import OnnxNode

OpFn = Callable[[OnnxNode], Any]


@dataclass
class _Window:
    """A convolution or pooling window over the spatial axes: ONNX attributes resolved."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    pads: list[tuple[int, int]]

    @classmethod
    def of(cls, n: OnnxNode, kernel: list[int]) -> _Window:
        """``kernel_shape``, ``strides``, ``dilations`` and ``pads`` / ``auto_pad`` of ``n``.

        Raises:
            CompileError: ``auto_pad`` SAME_* over a symbolic spatial size.
        """
        k = len(kernel)
        strides = list(n.attr("strides") or [1] * k)
        dilations = list(n.attr("dilations") or [1] * k)
        auto = n.attr("auto_pad", "NOTSET")
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            pads = []
            for size, kk, s, d in zip(n.input(0).shape[2:], kernel, strides, dilations):
                if not isinstance(size, int):
                    raise n.error(f"auto_pad={auto} needs static spatial sizes, got {size!r}")
                total = max((-(-size // s) - 1) * s + (kk - 1) * d + 1 - size, 0)
                low, high = total // 2, total - total // 2
                pads.append((low, high) if auto == "SAME_UPPER" else (high, low))
        else:
            flat = n.attr("pads") if auto == "NOTSET" and n.attr("pads") else [0] * 2 * k
            pads = list(zip(flat[:k], flat[k:]))
        return cls(list(kernel), strides, dilations, pads)

    def planar(self) -> _Window:
        """The same window over a 2-D image (a 1-D window gets a height-1 axis; 2-D and 3-D
        ones stay)."""
        if len(self.kernel) != 1:
            return self
        return _Window([1] + self.kernel, [1] + self.strides, [1] + self.dilations,
                       [(0, 0)] + self.pads)

    @property
    def symmetric(self) -> bool:
        return all(low == high for low, high in self.pads)

    def padding(self) -> tuple[int, ...]:
        return tuple(low for low, _ in self.pads)

    def torch_pad(self) -> list[int]:
        """``pads`` as ``F.pad`` amounts (last axis first)."""
        return [amount for low, high in reversed(self.pads) for amount in (low, high)]


def _spatial(n: OnnxNode) -> int:
    spatial = n.rank() - 2
    if spatial not in (1, 2, 3):
        raise n.error(f"only 1-D, 2-D and 3-D {n.op_type} are supported, got a "
                      f"rank-{n.rank()} input {list(n.input(0).shape)}")
    return spatial


def _planar(x: Any) -> Any:
    """(N, C, L) as (N, C, 1, L); 4-D and 5-D input unchanged."""
    return F.reshape(x, (*x.shape[:2], 1, x.shape[2])) if len(x.shape) == 3 else x


def _unplanar(y: Any, spatial: int) -> Any:
    return F.reshape(y, (*y.shape[:2], y.shape[3])) if spatial == 1 else y


def conv(n: OnnxNode) -> Any:
    spatial = _spatial(n)
    x, w, bias = n.input(0), n.input(1), n.optional(2)
    window = _Window.of(n, n.attr("kernel_shape") or list(w.shape[2:])).planar()
    x, w = _planar(x), _planar(w)
    if not window.symmetric:
        x, window.pads = F.pad(x, window.torch_pad()), [(0, 0)] * len(window.pads)
    y = (F.conv3d if spatial == 3 else F.conv2d)(
        x, w, bias, tuple(window.strides), window.padding(), tuple(window.dilations),
        n.attr("group", 1))
    return _unplanar(y, spatial)


def conv_transpose(n: OnnxNode) -> Any:
    """ConvTranspose (1-D and 2-D); uneven ``pads`` or ``output_shape`` crop or extend the
    full result. ``auto_pad`` SAME_* asks for ``output_shape`` = input size * stride."""
    spatial = _spatial(n)
    if spatial == 3:
        raise n.error("3-D ConvTranspose is not supported; 1-D and 2-D are")
    x, w, bias = n.input(0), n.input(1), n.optional(2)
    window = _Window.of(n, n.attr("kernel_shape") or list(w.shape[2:]))
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
    x, w, groups = _planar(x), _planar(w), n.attr("group", 1)
    simple = window.symmetric and all(e < max(s, d) for e, s, d in
                                      zip(extra, window.strides, window.dilations))
    if simple:
        y = F.conv_transpose2d(x, w, bias, tuple(window.strides), window.padding(),
                               tuple(extra), groups, tuple(window.dilations))
    else:
        y = F.conv_transpose2d(x, w, None, tuple(window.strides), 0, 0, groups,
                               tuple(window.dilations))
        (top, bottom), (left, right) = window.pads
        y = F.pad(y, [-left, extra[1] - right, -top, extra[0] - bottom])  # crop or extend
        if bias is not None:
            y = F.add(y, F.reshape(bias, (1, -1, 1, 1)))
    return _unplanar(y, spatial)


def max_pool(n: OnnxNode) -> Any:
    """MaxPool; 8- and 16-bit integers pool in float32 (exact) and are cast back.

    Raises:
        CompileError: the Indices output is asked for, or wider integers.
    """
    if n.outputs > 1:
        raise n.error("the Indices output of MaxPool is not supported")
    spatial, window = _spatial(n), _Window.of(n, n.attr("kernel_shape")).planar()
    x, dtype = n.input(0), np.dtype(str(n.input(0).dtype))
    if dtype.kind in "iu":
        if dtype.itemsize > 2:
            raise n.error(f"MaxPool of {dtype} tensors is not supported; float32 and 8- and "
                          "16-bit integers are")
        x = F.cast(x, np.float32)
    if not n.attr("ceil_mode", 0) and _tail_padding_is_ceil_mode(window, _planar(x).shape):
        window.pads = [(0, 0)] * len(window.pads)
        out = _unplanar(_max_pool(_planar(x), window, True), spatial)
    else:
        out = _pool(n, -math.inf, lambda x, w: _max_pool(x, w, bool(n.attr("ceil_mode", 0))),
                    x=x)
    return out if dtype.kind == "f" else F.cast(out, dtype)


def _max_pool(x: Any, window: _Window, ceil_mode: bool) -> Any:
    """``max_pool2d`` or ``max_pool3d`` by the window's rank."""
    pool = F.max_pool3d if len(window.kernel) == 3 else F.max_pool2d
    return pool(x, tuple(window.kernel), tuple(window.strides), window.padding(),
                tuple(window.dilations), ceil_mode)


def _tail_padding_is_ceil_mode(window: _Window, shape: Any) -> bool:
    """Whether padding only after the (N, C, H, W) input (TF's SAME pools: ``pads=[0, 0, 1,
    1]``) leaves the windows ceil mode makes without padding: then no padded copy is needed."""
    if not any(tail for _, tail in window.pads):
        return False
    for axis, (head, tail) in enumerate(window.pads):
        size = shape[2 + axis]
        kernel, stride, dilation = (window.kernel[axis], window.strides[axis],
                                    window.dilations[axis])
        if head or not isinstance(size, int):
            return False
        padded = (size + tail - dilation * (kernel - 1) - 1) // stride + 1
        if _ceil_windows(size, kernel, stride, dilation, 0, 0) != padded:
            return False
    return True


def average_pool(n: OnnxNode) -> Any:
    include_pad = bool(n.attr("count_include_pad", 0))
    if any(d != 1 for d in n.attr("dilations") or []):
        if n.attr("ceil_mode", 0):
            raise n.error("ceil_mode=1 with dilations is not supported")
        return _pool(n, 0.0, _dilated_mean, count_padding=include_pad)
    pool = F.avg_pool3d if len(n.input(0).shape) == 5 else F.avg_pool2d
    return _pool(n, 0.0, lambda x, w: pool(
        x, tuple(w.kernel), tuple(w.strides), w.padding(), bool(n.attr("ceil_mode", 0)),
        include_pad), count_padding=include_pad)


def _dilated_mean(x: Any, window: _Window) -> Any:
    """The mean over each dilated window (padding counted): a depthwise convolution with
    weights ``1 / window size`` (the average pools have no dilation)."""
    channels = x.shape[1]
    weight = np.full((channels, 1, *window.kernel), 1.0 / math.prod(window.kernel), np.float32)
    return (F.conv3d if len(window.kernel) == 3 else F.conv2d)(
        x, weight, None, tuple(window.strides), window.padding(), tuple(window.dilations),
        channels)


def lp_pool(n: OnnxNode) -> Any:
    """LpPool: ``(sum of |x| ** p over each window) ** (1 / p)``, zero padding adding
    nothing: an average pool's window sums (``divisor_override=1``), or a dilated window's
    mean times its size."""
    p, x = n.attr("p", 2), n.input(0)
    powered = F.mul(x, x) if p == 2 else F.pow(F.abs(x), float(p))
    if any(d != 1 for d in n.attr("dilations") or []):
        if n.attr("ceil_mode", 0):
            raise n.error("ceil_mode=1 with dilations is not supported")
        sums = _pool(n, 0.0, lambda x, w: F.mul(_dilated_mean(x, w), float(math.prod(w.kernel))),
                     x=powered)
    else:
        pool = F.avg_pool3d if len(x.shape) == 5 else F.avg_pool2d
        sums = _pool(n, 0.0, lambda x, w: pool(x, tuple(w.kernel), tuple(w.strides),
                                               w.padding(), bool(n.attr("ceil_mode", 0)),
                                               True, 1), x=powered)
    return F.sqrt(sums) if p == 2 else F.pow(sums, 1.0 / p)


def _pool(n: OnnxNode, fill: float, run: Callable[[Any, _Window], Any],
          count_padding: bool = True, x: Any = None) -> Any:
    """A 2-D or 3-D pool. Padding ``run`` cannot express (uneven, or over half the window) is
    applied first with ``fill``; when padding must not count, the result is divided by
    the (known) share of real elements in each window. ``x`` replaces input 0."""
    spatial = _spatial(n)
    window = _Window.of(n, n.attr("kernel_shape")).planar()
    x = _planar(n.input(0) if x is None else x)
    oversized = any(p > (d * (k - 1) + 1) // 2 for pair, k, d in
                    zip(window.pads, window.kernel, window.dilations) for p in pair)
    if window.symmetric and not oversized:
        return _unplanar(run(x, window), spatial)
    pads = window.pads
    amounts, window.pads = window.torch_pad(), [(0, 0)] * len(pads)
    out = run(F.pad(x, amounts, value=fill), window)
    if not count_padding:
        ones = np.ones((1, 1, *x.shape[2:]), np.float32)
        out = F.div(out, run(F.pad(ones, amounts), window))  # (1, 1, OH, OW) share
    if n.attr("ceil_mode", 0):
        for axis, (head, tail) in enumerate(pads):
            size = _ceil_windows(x.shape[2 + axis], window.kernel[axis], window.strides[axis],
                                 window.dilations[axis], head, tail)
            if out.shape[2 + axis] > size:
                out = F.slice(out, 2 + axis, 0, size)
    return _unplanar(out, spatial)


def _ceil_windows(size: int, kernel: int, stride: int, dilation: int, head: int,
                  tail: int) -> int:
    """Windows along an axis in ceil mode as onnxruntime counts them: the last one must start
    inside the input or its head padding. Padding the input first would let it start in the
    tail padding."""
    count = -(-(size + head + tail - dilation * (kernel - 1) - 1) // stride) + 1
    return count - 1 if (count - 1) * stride >= size + head else count


def _global(fn: Callable[..., Any]) -> OpFn:
    return lambda n: fn(n.input(0), dim=tuple(range(2, n.rank())), keepdim=True)


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
    "MaxPool": max_pool, "AveragePool": average_pool, "LpPool": lp_pool,
    "GlobalAveragePool": _global(F.mean), "GlobalMaxPool": _global(F.amax),
    "LRN": lrn, "BatchNormalization": batch_normalization,
    "LayerNormalization": layer_normalization, "LpNormalization": lp_normalization,
    "InstanceNormalization": instance_normalization,
    "Softmax": _softmax(F.softmax), "LogSoftmax": _softmax(F.log_softmax),
    "Hardmax": _softmax(_hardmax),
    "LeakyRelu": lambda n: F.leaky_relu(n.input(0), n.attr("alpha", 0.01)),
    "Gelu": lambda n: F.gelu(n.input(0), n.attr("approximate", "none")),
    "HardSigmoid": hard_sigmoid, "HardSwish": lambda n: F.hardswish(n.input(0)),
    "PRelu": prelu,
}
