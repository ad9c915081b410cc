"""ONNX DFT (opsets 17 and 20) and STFT (opset 17) as products with constant DFT matrices,
and the window ops (Hann, Hamming, Blackman) of a size known at import, computed here.

A DFT of known length along one axis is a linear map of the signal's (real, imaginary)
values: ``dft_matrix`` builds it in float64 (then float32) for forward, inverse and one-sided
(real-input forward, or ``irfft`` for an inverse) transforms, and the DFT runs as one
``linear`` over that axis. An STFT is one strided ``conv1d`` whose kernels are the window
times the DFT rows, one output channel per (bin, real/imaginary).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from .node import OnnxNode


def dft_matrix(size: int, channels: int, length: int, inverse: bool, onesided: bool
               ) -> np.ndarray:
    """The ``(bins * out_channels, size * channels)`` float32 matrix taking ``size`` samples
    of ``channels`` (1: real, 2: real and imaginary, interleaved per sample) to the
    ``length``-point DFT's bins, each (real, imaginary), or the real samples of an inverse
    one-sided transform (``irfft``: out_channels 1). Samples past ``length`` are dropped and
    missing ones count as zeros, as numpy's ``n=``."""
    used = min(size, length)
    if inverse and onesided:
        # NOTE: the Hermitian half: bins 1 .. length/2 (excluded) stand for two
        kept = min(size, length // 2 + 1)
        k = np.arange(kept)[:, None]
        t = np.arange(length)[None, :]
        weight = np.where((k == 0) | (2 * k == length), 1.0, 2.0) / length
        angle = 2 * np.pi * ((k * t) % length) / length
        matrix = np.zeros((length, 1, size, channels))
        matrix[:, 0, :kept, 0] = (weight * np.cos(angle)).T
        if channels == 2:
            matrix[:, 0, :kept, 1] = (-weight * np.sin(angle)).T
        return matrix.reshape(length, size * channels).astype(np.float32)
    bins = length // 2 + 1 if onesided else length
    sign = 1.0 if inverse else -1.0
    j = np.arange(used)[None, :]
    k = np.arange(bins)[:, None]
    angle = 2 * np.pi * ((j * k) % length) / length
    cos, sin = np.cos(angle), sign * np.sin(angle)
    matrix = np.zeros((bins, 2, size, channels))
    matrix[:, 0, :used, 0], matrix[:, 1, :used, 0] = cos, sin
    if channels == 2:
        matrix[:, 0, :used, 1], matrix[:, 1, :used, 1] = -sin, cos
    if inverse:
        matrix /= length
    return matrix.reshape(bins * 2, size * channels).astype(np.float32)


def _float32(n: OnnxNode, x: Any) -> Any:
    if x.dtype != np.float32:
        raise n.error(f"transforms float32 signals, got {x.dtype}")
    return x


def dft(n: OnnxNode) -> Any:
    """DFT: along ``axis`` (an attribute at opset 17, input 2 from 20), ``dft_length``
    (input 1) points; the last axis holds 1 (real) or 2 (complex) values."""
    x = _float32(n, n.input(0))
    rank = len(x.shape)
    if n.opset >= 20:
        axis = int(n.known(2, "axis").reshape(-1)[0]) if n.has(2) else -2
    else:
        axis = n.attr("axis", 1)
    axis = n.axis(axis, rank)
    channels, size = x.shape[-1], x.shape[axis]
    if axis == rank - 1 or channels not in (1, 2) or not isinstance(size, int):
        raise n.error(f"expected a signal axis other than the last, of fixed size, and a last "
                      f"axis of 1 or 2 values; got axis {axis} of shape {list(x.shape)}")
    inverse, onesided = bool(n.attr("inverse", 0)), bool(n.attr("onesided", 0))
    length = (int(n.known(1, "dft_length").reshape(-1)[0]) if n.has(1)
              else 2 * (size - 1) if inverse and onesided else size)
    matrix = dft_matrix(size, channels, length, inverse, onesided)
    order = [d for d in range(rank - 1) if d != axis] + [axis, rank - 1]
    moved = F.permute(x, order)  # (..., size, channels)
    lead = tuple(moved.shape[:-2])
    out = F.linear(F.reshape(moved, (*lead, size * channels)), matrix)
    out = F.reshape(out, (*lead, -1, 1 if inverse and onesided else 2))  # (..., bins, c)
    back = [order.index(d) for d in range(rank)]
    return F.permute(out, back)


def stft(n: OnnxNode) -> Any:
    """STFT: frames of ``frame_length`` (input 3, else the window's length) every
    ``frame_step`` (input 1) samples, times ``window`` (input 2, known at import), each
    transformed (``onesided``: the first ``frame_length / 2 + 1`` bins)."""
    signal = _float32(n, n.input(0))
    step = int(n.known(1, "frame_step").reshape(-1)[0])
    window = n.known(2, "window").astype(np.float64) if n.has(2) else None
    if n.has(3):
        length = int(n.known(3, "frame_length").reshape(-1)[0])
    elif window is not None:
        length = len(window)
    else:
        raise n.error("needs a window or a frame_length")
    if window is not None and len(window) != length:
        raise n.error(f"window of {len(window)} samples for frames of {length}")
    batch, size, channels = signal.shape
    if channels not in (1, 2) or not isinstance(size, int) or size < length or step < 1:
        raise n.error(f"expected a signal (batch, samples >= {length}, 1 or 2) and a step "
                      f">= 1, got {list(signal.shape)} and {step}")
    onesided = bool(n.attr("onesided", 1))
    matrix = dft_matrix(length, channels, length, False, onesided)  # (bins * 2, length * c)
    if window is not None:
        matrix = (matrix.reshape(-1, length, channels) * window[None, :, None].astype(
            np.float32)).reshape(matrix.shape)
    bins = matrix.shape[0] // 2
    # (bins * 2, c, length): the kernels of a conv over (batch, c, samples)
    kernels = np.ascontiguousarray(matrix.reshape(-1, length, channels).transpose(0, 2, 1))
    frames = F.conv1d(F.permute(signal, [0, 2, 1]), kernels, stride=step)
    out = F.reshape(frames, (batch, bins, 2, -1))  # (batch, bins, re/im, frames)
    return F.permute(out, [0, 3, 1, 2])


_WINDOWS = {
    "HannWindow": lambda t: np.sin(np.pi * t) ** 2,
    "HammingWindow": lambda t: 25 / 46 - (1 - 25 / 46) * np.cos(2 * np.pi * t),
    "BlackmanWindow": lambda t: 0.42 - 0.5 * np.cos(2 * np.pi * t) + 0.08 * np.cos(4 * np.pi * t),
}
"""Each window at ``t = n / N`` (``periodic``, the default) or ``n / (N - 1)``."""


def window(n: OnnxNode) -> np.ndarray:
    """HannWindow / HammingWindow / BlackmanWindow (opset 17) of a known ``size``, in the
    element type ``output_datatype`` (float32 by default)."""
    from onnx.helper import tensor_dtype_to_np_dtype

    size = int(n.known(0, "size").reshape(-1)[0])
    span = size if n.attr("periodic", 1) else size - 1
    dtype = tensor_dtype_to_np_dtype(n.attr("output_datatype", 1))
    if not span:  # NOTE: one sample: 1, as torch's windows
        return np.ones(size, dtype)
    return _WINDOWS[n.op_type](np.arange(size) / span).astype(dtype)


OPS = {"DFT": dft, "STFT": stft, **dict.fromkeys(_WINDOWS, window)}
