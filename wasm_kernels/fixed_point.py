"""TFLite's fixed-point rescaling of quantized values, in integers only (gemmlowp's
``SaturatingRoundingDoublingHighMul`` and ``RoundingDivideByPOT``).

A real factor ``r > 0`` becomes ``(multiplier, shift)`` with ``r ~= multiplier * 2**(shift -
31)`` and ``multiplier`` in ``[2**30, 2**31)``; ``x * r`` is then computed as
``rounding_divide_by_pot(srdhm(x << max(shift, 0), multiplier), max(-shift, 0))``. The
``qrescale`` kernels run these steps in wasm; this numpy form is the host provider's, and
``modelc`` uses ``quantize_multiplier`` to turn scales into kernel arguments.
"""

from __future__ import annotations

import math

import numpy as np

ADD_LEFT_SHIFT = 20
"""TFLite's headroom for 8-bit ``Add``: inputs are shifted left by it before rescaling, so
the rescaled sum keeps 20 fractional bits."""

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def quantize_multiplier(real: float) -> tuple[int, int]:
    """``(multiplier, shift)`` with ``real ~= multiplier * 2**(shift - 31)`` (TFLite's
    ``QuantizeMultiplier``); ``(0, 0)`` for 0 or factors below ``2**-31``.

    Raises:
        ValueError: ``real`` is negative, infinite or NaN.
    """
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"a rescaling factor must be finite and >= 0, got {real!r}")
    if real == 0:
        return 0, 0
    fraction, shift = math.frexp(real)
    multiplier = round(fraction * (1 << 31))
    if multiplier == 1 << 31:
        multiplier //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return int(multiplier), int(shift)


def srdhm(a: np.ndarray, b: int) -> np.ndarray:
    """Saturating rounding doubling high multiply: the high 32 bits of ``2 * a * b``, rounded
    to nearest with ties up (gemmlowp's nudge and C's division toward zero), for int32 ``a``
    (saturating only at ``a == b == INT32_MIN``)."""
    product = np.asarray(a, np.int64) * np.int64(b)
    nudge = np.where(product >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    total = product + nudge
    # NOTE: C's int64 division truncates toward zero; numpy's // floors.
    high = np.where(total >= 0, total // (1 << 31), -((-total) // (1 << 31)))
    saturate = (np.asarray(a) == INT32_MIN) & (b == INT32_MIN)
    return np.where(saturate, INT32_MAX, high).astype(np.int32)


def rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """``x / 2**exponent`` rounded to nearest, ties away from zero, for int32 ``x``."""
    x = np.asarray(x, np.int32)
    mask = np.int32((1 << exponent) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(np.int32)
    return ((x >> np.int32(exponent)) + (remainder > threshold)).astype(np.int32)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """``x * multiplier * 2**(shift - 31)`` rounded, for int32 ``x`` (TFLite's
    ``MultiplyByQuantizedMultiplier``); the left shift wraps as int32 arithmetic does."""
    shifted = (np.asarray(x, np.int64) << max(shift, 0)).astype(np.int32)
    return rounding_divide_by_pot(srdhm(shifted, multiplier), max(-shift, 0))
