"""Integer Add and Concat of int8 tensors with their own (scale, zero point), in TFLite's
fixed-point scheme: each real rescale factor becomes an int32 multiplier and a power-of-two
shift, applied with a saturating rounding doubling high multiply and a rounding divide by a
power of two. A quantized tensor ``q`` stands for the reals ``scale * (q - zero_point)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._dispatch import primitive

__all__ = ["qadd", "qconcat"]

ADD_LEFT_SHIFT = 20
"""TFLite's headroom for 8-bit Add: offsets are shifted left by it before rescaling."""
INT8_MIN, INT8_MAX = -128, 127


def _multiplier(real: float) -> tuple[int, int]:
    """``(m, shift)`` with ``real ~= m * 2**(shift - 31)`` and ``m`` in ``[2**30, 2**31)``."""
    if real <= 0:
        return 0, 0
    fraction, shift = math.frexp(real)
    m = round(fraction * 2 ** 31)
    if m == 2 ** 31:
        m, shift = m // 2, shift + 1
    return (0, 0) if shift < -31 else (m, shift)


def _rescale(x: np.ndarray, real: float) -> np.ndarray:
    """``x * real`` for int32 ``x`` in fixed point: ``x << left``, the rounding doubling high
    multiply by ``m``, then the rounding (half away from zero) divide by ``2**right``."""
    m, shift = _multiplier(real)
    left, right = max(shift, 0), max(-shift, 0)
    x = (x.astype(np.int64) << left).astype(np.int32).astype(np.int64)
    product = x * m
    # NOTE: gemmlowp's nudge, then C's division (toward zero): ties round up.
    high = np.where(product >= 0, (product + (1 << 30)) >> 31,
                    -((-product + (1 << 30) - 1) >> 31))
    remainder = high & ((1 << right) - 1)
    threshold = ((1 << right) - 1) // 2 + (high < 0)
    return ((high >> right) + (remainder > threshold)).astype(np.int32)


def _check_int8(name: str, value: np.ndarray) -> None:
    if np.asarray(value).dtype != np.int8:
        raise TypeError(f"{name}: expected an int8 tensor, got {np.asarray(value).dtype}")


@primitive
def qadd(input: np.ndarray, other: np.ndarray, input_scale: float, input_zero_point: int,
         other_scale: float, other_zero_point: int, scale: float, zero_point: int,
         low: int = INT8_MIN, high: int = INT8_MAX) -> np.ndarray:
    """The int8 sum of two int8 tensors, as TFLite's 8-bit Add: both offsets rescaled by
    ``s / (2 max(s_in, s_other))`` after a left shift by 20, summed, rescaled by
    ``2 max(s_in, s_other) / (2**20 scale)``, offset by ``zero_point`` and clamped to ``[low,
    high]`` (a fused ReLU is ``low = zero_point``). Broadcasts as numpy does.

    >>> one = np.array([10], np.int8)
    >>> qadd(one, one, 0.1, 0, 0.1, 0, 0.2, 0)
    array([10], dtype=int8)

    Raises:
        TypeError: an operand is not int8.
    """
    _check_int8("qadd", input)
    _check_int8("qadd", other)
    twice_max = 2 * max(input_scale, other_scale)
    total = sum(_rescale((np.asarray(q).astype(np.int32) - np.int32(zp)) << ADD_LEFT_SHIFT,
                         s / twice_max)
                for q, s, zp in ((input, input_scale, input_zero_point),
                                 (other, other_scale, other_zero_point)))
    out = _rescale(np.asarray(total, np.int32), twice_max / (2 ** ADD_LEFT_SHIFT * scale))
    return np.clip(out + np.int32(zero_point), low, high).astype(np.int8)


@primitive
def qconcat(tensors: Sequence[np.ndarray], scales: Sequence[float],
            zero_points: Sequence[int], scale: float, zero_point: int,
            dim: int = 0) -> np.ndarray:
    """Int8 tensors joined along ``dim`` into one with (``scale``, ``zero_point``): an input
    already in those is copied, any other requantized in fixed point by ``s_i / scale``
    (rounded, clamped to int8), as TFLite's Concatenation.

    >>> qconcat([np.array([4], np.int8), np.array([4], np.int8)], [0.5, 1.0], [0, 0], 1.0, 0)
    array([2, 4], dtype=int8)

    Raises:
        TypeError: an input is not int8.
        ValueError: ``scales`` or ``zero_points`` do not give one per input.
    """
    if not len(tensors) == len(scales) == len(zero_points):
        raise ValueError(f"qconcat: {len(tensors)} tensors need as many scales and zero "
                         f"points, got {len(scales)} and {len(zero_points)}")
    parts = []
    for q, s, zp in zip(tensors, scales, zero_points):
        _check_int8("qconcat", q)
        if (s, zp) == (scale, zero_point):
            parts.append(np.asarray(q))
            continue
        moved = _rescale(np.asarray(q).astype(np.int32) - np.int32(zp), s / scale)
        parts.append(np.clip(moved + np.int32(zero_point), INT8_MIN, INT8_MAX).astype(np.int8))
    return np.concatenate(parts, axis=dim)
