"""ONNX pooling: MaxPool (and its Indices), AveragePool, LpPool, GlobalAveragePool and
GlobalMaxPool, 1-D to 3-D, written in ``nn.functional`` calls. Padding the pools cannot
express (uneven, or over half the window) is applied first; ceil mode counts windows as
onnxruntime does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from .node import OnnxNode
from .window import Window, planar, spatial_rank, unplanar

OpFn = Callable[[OnnxNode], Any]


def max_pool(n: OnnxNode) -> Any:
    """MaxPool; 8- and 16-bit integers pool in float32 (exact) and are cast back. The
    Indices output (1-D and 2-D) is ``_argmax_indices``.

    Raises:
        CompileError: wider integers, or Indices of a 3-D pool or over a symbolic batch.
    """
    spatial, window = spatial_rank(n), Window.of(n, n.attr("kernel_shape")).planar()
    x, dtype = n.input(0), np.dtype(str(n.input(0).dtype))
    if dtype.kind in "iu":
        if dtype.itemsize > 2:
            raise n.error(f"MaxPool of {dtype} tensors is not supported; float32 and 8- and "
                          "16-bit integers are")
        x = F.cast(x, np.float32)
    pads = list(window.pads)
    if _same_upper(window) and not n.attr("ceil_mode", 0) and len(window.kernel) == 2:
        out = unplanar(F.max_pool2d(planar(x), tuple(window.kernel), 1, "same",
                                    tuple(window.dilations)), spatial)
    elif not n.attr("ceil_mode", 0) and _tail_padding_is_ceil_mode(window, planar(x).shape):
        window.pads = [(0, 0)] * len(window.pads)
        out = unplanar(_max_pool(planar(x), window, True), spatial)
    else:
        out = _pool(n, -math.inf, lambda x, w: _max_pool(x, w, bool(n.attr("ceil_mode", 0))),
                    x=x)
    values = out if dtype.kind == "f" else F.cast(out, dtype)
    if n.outputs == 1:
        return values
    if spatial == 3:
        raise n.error("the Indices output of a 3-D MaxPool is not supported")
    window.pads = pads
    indices = _argmax_indices(n, planar(x), window, planar(out))
    return values, unplanar(indices, spatial)


def _argmax_indices(n: OnnxNode, x: Any, window: Window, out: Any) -> Any:
    """MaxPool's Indices: for each window, the flat position in (N, C, H, W) ``x`` of the
    first element (in the window's row-major order, as onnxruntime) equal to the max
    ``out``; positions run over (H, W), or (W, H) with ``storage_order=1``. Each tap is a
    strided slice of ``x`` padded with -inf, matched against ``out`` from the last tap back,
    so the first match is the one kept."""
    batch, channels, h, w = x.shape
    if not all(isinstance(d, int) for d in x.shape):
        raise n.error(f"the Indices output of MaxPool needs fixed dims, got {list(x.shape)}")
    oh, ow = out.shape[2:]
    (top, _), (left, _) = window.pads
    (kh, kw), (sh, sw), (dh, dw) = window.kernel, window.strides, window.dilations
    reach = [top + (oh - 1) * sh + (kh - 1) * dh + 1, left + (ow - 1) * sw + (kw - 1) * dw + 1]
    amounts = [left, max(reach[1] - left - w, 0), top, max(reach[0] - top - h, 0)]
    padded = F.pad(x, amounts, value=-math.inf)
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    where = (cols * h + rows) if n.attr("storage_order", 0) else (rows * w + cols)
    where = np.pad(where.astype(np.float32), [(top, amounts[3]), (left, amounts[1])])
    found: Any = None
    for i in reversed(range(kh)):
        for j in reversed(range(kw)):
            rows_, cols_ = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh), slice(
                j * dw, j * dw + (ow - 1) * sw + 1, sw)
            tap = F.slice(F.slice(padded, 2, rows_.start, rows_.stop, sh), 3, cols_.start,
                          cols_.stop, sw)  # (N, C, OH, OW)
            here = where[rows_, cols_]
            found = F.where(F.eq(tap, out), here, 0.0 if found is None else found)
    offsets = (np.arange(batch).reshape(-1, 1, 1, 1) * channels
               + np.arange(channels).reshape(1, -1, 1, 1)) * (h * w)
    return F.add(F.cast(found, np.int64), offsets.astype(np.int64))


def _max_pool(x: Any, window: Window, ceil_mode: bool) -> Any:
    """``max_pool2d`` or ``max_pool3d`` by the window's rank."""
    pool = F.max_pool3d if len(window.kernel) == 3 else F.max_pool2d
    return pool(x, tuple(window.kernel), tuple(window.strides), window.padding(),
                tuple(window.dilations), ceil_mode)


def _tail_padding_is_ceil_mode(window: Window, shape: Any) -> bool:
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


def _same_upper(window: Window) -> bool:
    """Whether the padding is ``max_pool2d``'s ``'same'`` at stride 1 with an extra row or
    column at the end (SAME_UPPER of an even window): then no padded copy is needed."""
    totals = [d * (k - 1) for k, d in zip(window.kernel, window.dilations)]
    return all(s == 1 for s in window.strides) and list(window.pads) != [
        (t // 2, t // 2) for t in totals] and all(
        (head, tail) == (t // 2, t - t // 2) for (head, tail), t in zip(window.pads, totals))


def average_pool(n: OnnxNode) -> Any:
    include_pad = bool(n.attr("count_include_pad", 0))
    if any(d != 1 for d in n.attr("dilations") or []):
        if n.attr("ceil_mode", 0):
            return _dilated_ceil_mean(n, include_pad)
        return _pool(n, 0.0, _dilated_mean, count_padding=include_pad)
    pool = F.avg_pool3d if len(n.input(0).shape) == 5 else F.avg_pool2d
    return _pool(n, 0.0, lambda x, w: pool(
        x, tuple(w.kernel), tuple(w.strides), w.padding(), bool(n.attr("ceil_mode", 0)),
        include_pad), count_padding=include_pad)


def _dilated_mean(x: Any, window: Window) -> Any:
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


def _dilated_ceil_mean(n: OnnxNode, include_pad: bool) -> Any:
    """A dilated average pool in ceil mode: the input padded past its tail until the last
    window (``_ceil_windows``) fits, ``_dilated_mean`` divided by the (known) share of each
    window inside the padded input (``include_pad``) or the input itself."""
    spatial = spatial_rank(n)
    window = Window.of(n, n.attr("kernel_shape")).planar()
    x = planar(n.input(0))
    sizes, counts, pads = list(x.shape[2:]), [], []
    for axis, (head, tail) in enumerate(window.pads):
        kernel, stride, dilation = (window.kernel[axis], window.strides[axis],
                                    window.dilations[axis])
        counts.append(_ceil_windows(sizes[axis], kernel, stride, dilation, head, tail))
        reach = (counts[-1] - 1) * stride + dilation * (kernel - 1) + 1
        pads.append((head, tail, max(reach - sizes[axis] - head - tail, 0)))
    flat = Window(window.kernel, window.strides, window.dilations, [(0, 0)] * len(pads))
    amounts = [a for head, tail, extra in reversed(pads) for a in (head, tail + extra)]
    out = _dilated_mean(F.pad(x, amounts), flat)
    inside = np.ones((1, 1, *sizes), np.float32)
    if include_pad:
        inside = np.pad(inside, [(0, 0), (0, 0)] + [(h, t) for h, t, _ in pads],
                        constant_values=1.0)
        amounts = [a for _, _, extra in reversed(pads) for a in (0, extra)]
    out = F.div(out, _dilated_mean(F.pad(inside, amounts), flat))
    for axis, count in enumerate(counts):
        out = F.slice(out, 2 + axis, 0, count)
    return unplanar(out, spatial)


def _pool(n: OnnxNode, fill: float, run: Callable[[Any, Window], Any],
          count_padding: bool = True, x: Any = None) -> Any:
    """A 2-D or 3-D pool. Padding ``run`` cannot express (uneven, or over half the window) is
    applied first with ``fill``; when padding must not count, the result is divided by
    the (known) share of real elements in each window. ``x`` replaces input 0."""
    spatial = spatial_rank(n)
    window = Window.of(n, n.attr("kernel_shape")).planar()
    x = planar(n.input(0) if x is None else x)
    oversized = any(p > (d * (k - 1) + 1) // 2 for pair, k, d in
                    zip(window.pads, window.kernel, window.dilations) for p in pair)
    if window.symmetric and not oversized:
        return unplanar(run(x, window), spatial)
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
    return unplanar(out, spatial)


def _ceil_windows(size: int, kernel: int, stride: int, dilation: int, head: int,
                  tail: int) -> int:
    """Windows along an axis in ceil mode as onnxruntime counts them: the last one must start
    inside the input or its head padding. Padding the input first would let it start in the
    tail padding."""
    count = -(-(size + head + tail - dilation * (kernel - 1) - 1) // stride) + 1
    return count - 1 if (count - 1) * stride >= size + head else count


def _global(fn: Callable[..., Any]) -> OpFn:
    return lambda n: fn(n.input(0), dim=tuple(range(2, n.rank())), keepdim=True)


OPS: dict[str, OpFn] = {
    "MaxPool": max_pool, "AveragePool": average_pool, "LpPool": lp_pool,
    "GlobalAveragePool": _global(F.mean), "GlobalMaxPool": _global(F.amax),
}
