"""Pooling: ``max_pool2d``, ``avg_pool2d``, ``adaptive_avg_pool2d`` (primitives), and
``max_pool3d``, ``avg_pool3d`` (composites: a 2-D pool over each depth plane, then one over
depth, since a box's max, sum and element count separate by axis).

Window counts follow torch, including ``ceil_mode`` (the last window must start inside
the input or its left padding) and avg pooling's divisor rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .._dispatch import primitive
from .._utils import pair, triple
from .conv import conv_padding
from .shape import reshape

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "avg_pool3d", "max_pool2d", "max_pool3d"]


def _out_size(size: int, kernel: int, stride: int, pad: int, dilation: int,
              ceil_mode: bool) -> int:
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _check_pool(input: np.ndarray, kernel: tuple[int, int], pad: tuple[int, int],
                dilation: tuple[int, int], op: str) -> None:
    if input.ndim != 4:
        raise ValueError(f"{op}: expected 4D (N, C, H, W) input, got shape {input.shape}")
    for k, p, d in zip(kernel, pad, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise ValueError("pad should be at most half of effective kernel size, but got "
                             f"pad={p}, kernel_size={k} and dilation={d}")


def _windows(input: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int],
             pad: tuple[int, int], dilation: tuple[int, int], ceil_mode: bool,
             fill: float) -> np.ndarray:
    """Strided views (N, C, OH, OW, kH, kW) of ``input`` padded with ``fill``."""
    widths = [(0, 0), (0, 0)]
    for axis in range(2):
        size = input.shape[2 + axis]
        out = _out_size(size, kernel[axis], stride[axis], pad[axis], dilation[axis], ceil_mode)
        needed = (out - 1) * stride[axis] + dilation[axis] * (kernel[axis] - 1) + 1
        widths.append((pad[axis], max(needed - size - pad[axis], 0)))
    x = np.pad(input, widths, constant_values=fill)
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    views = sliding_window_view(x, spans, axis=(2, 3))
    return views[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]


def _stride(kernel_size: Any, stride: Any) -> tuple[int, int]:
    return pair(kernel_size if stride is None or stride == [] or stride == () else stride)


@primitive
def max_pool2d(input: np.ndarray, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> np.ndarray:
    """Max over each window, padding with -inf; ``stride`` defaults to ``kernel_size``.
    ``padding`` may also be ``'same'`` (stride 1; an even window's extra row and column at
    the end, as ``conv2d``'s) or ``'valid'``.

    Raises:
        ValueError: input not 4-D, padding over half the effective kernel, an unknown
            padding string, or ``'same'`` at a stride other than 1.

    >>> max_pool2d(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    kernel, dil, step = pair(kernel_size), pair(dilation), _stride(kernel_size, stride)
    lowest = -np.inf if np.issubdtype(input.dtype, np.floating) else np.iinfo(input.dtype).min
    (top, bottom), (left, right) = conv_padding(padding, kernel, step, dil)
    pad = (top, left)
    _check_pool(input, kernel, pad, dil, "max_pool2d")
    if (bottom, right) != pad:  # 'same' for an even window: the extra row / column at the end
        input = np.pad(input, [(0, 0), (0, 0), (0, bottom - top), (0, right - left)],
                       constant_values=lowest)
    views = _windows(input, kernel, step, pad, dil, ceil_mode, lowest)
    return views.max(axis=(4, 5))


def _avg_divisor(size: int, out: int, kernel: int, stride: int, pad: int,
                 count_include_pad: bool) -> np.ndarray:
    start = np.arange(out) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    if count_include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


@primitive
def avg_pool2d(input: np.ndarray, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> np.ndarray:
    """Mean over each window, as ``torch.nn.functional.avg_pool2d``: zero padding counts
    toward the divisor when ``count_include_pad``; windows running past the padding in
    ``ceil_mode`` never do.

    Raises:
        ValueError: input not 4-D, or padding over half the kernel.

    >>> avg_pool2d(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    kernel, pad, step = pair(kernel_size), pair(padding), _stride(kernel_size, stride)
    _check_pool(input, kernel, pad, (1, 1), "avg_pool2d")
    sums = _windows(input, kernel, step, pad, (1, 1), ceil_mode, 0.0).sum(axis=(4, 5))
    if divisor_override is not None:
        return (sums / divisor_override).astype(input.dtype, copy=False)
    rows, cols = (_avg_divisor(input.shape[2 + axis], sums.shape[2 + axis], kernel[axis],
                               step[axis], pad[axis], count_include_pad) for axis in range(2))
    return (sums / np.outer(rows, cols)).astype(input.dtype, copy=False)


@primitive
def adaptive_avg_pool2d(input: np.ndarray, output_size: Any) -> np.ndarray:
    """Mean over windows ``[floor(i * H / OH), ceil((i + 1) * H / OH))``; a None in
    ``output_size`` keeps that input size.

    >>> adaptive_avg_pool2d(np.ones((1, 2, 5, 7), np.float32), 1).shape
    (1, 2, 1, 1)
    """
    h, w = input.shape[-2:]
    oh, ow = (size if size is not None else full
              for size, full in zip(pair(output_size), (h, w)))
    out = np.empty((*input.shape[:-2], oh, ow), dtype=input.dtype)
    for i in range(oh):
        h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[..., i, j] = input[..., h0:h1, w0:w1].mean(axis=(-2, -1))
    return out


def _pool3d(pool: Any, input: np.ndarray, kernel_size: Any, stride: Any, padding: Any,
            **options: Any) -> np.ndarray:
    """``pool`` (a 2-D pool) over the (H, W) planes of (N, C, D, H, W) ``input``, then over
    depth, as a (kD, 1) window on (N, C, D, OH * OW). ``options`` holding ``dilation`` and
    ``divisor_override`` are per axis and per pass."""
    if len(input.shape) != 5:
        raise ValueError(f"expected 5D (N, C, D, H, W) input, got shape {list(input.shape)}")
    (kd, kh, kw), (pd, ph, pw) = triple(kernel_size), triple(padding)
    sd, sh, sw = triple(kernel_size if stride is None or stride in ([], ()) else stride)
    dilation = options.pop("dilation", None)
    override = options.pop("divisor_override", None)
    planar, deep = dict(options), dict(options)
    if dilation is not None:
        dd, dh, dw = triple(dilation)
        planar["dilation"], deep["dilation"] = (dh, dw), (dd, 1)
    if override is not None:
        planar["divisor_override"], deep["divisor_override"] = 1, override
    n, c, depth, h, w = input.shape
    planes = pool(reshape(input, (n, c * depth, h, w)), (kh, kw), (sh, sw), (ph, pw), **planar)
    oh, ow = planes.shape[2:]
    out = pool(reshape(planes, (n, c, depth, oh * ow)), (kd, 1), (sd, 1), (pd, 0), **deep)
    return reshape(out, (n, c, out.shape[2], oh, ow))  # (N, C, OD, OH, OW)


def max_pool3d(input: np.ndarray, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> np.ndarray:
    """Max over each (kD, kH, kW) window, as ``torch.nn.functional.max_pool3d``.

    Raises:
        ValueError: input not 5-D, or padding over half the effective kernel.

    >>> max_pool3d(np.arange(8, dtype=np.float32).reshape(1, 1, 2, 2, 2), 2).tolist()
    [[[[[7.0]]]]]
    """
    return _pool3d(max_pool2d, input, kernel_size, stride, padding, dilation=dilation,
                   ceil_mode=ceil_mode)


def avg_pool3d(input: np.ndarray, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> np.ndarray:
    """Mean over each (kD, kH, kW) window, as ``torch.nn.functional.avg_pool3d`` (the divisor
    rules of ``avg_pool2d``, per axis).

    Raises:
        ValueError: input not 5-D, or padding over half the kernel.

    >>> avg_pool3d(np.arange(8, dtype=np.float32).reshape(1, 1, 2, 2, 2), 2).tolist()
    [[[[[3.5]]]]]
    """
    return _pool3d(avg_pool2d, input, kernel_size, stride, padding, ceil_mode=ceil_mode,
                   count_include_pad=count_include_pad, divisor_override=divisor_override)
