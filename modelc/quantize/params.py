"""Quantization parameters: int8 weights symmetric per output channel (zero point 0, values
in [-127, 127]); activations asymmetric per tensor, ``(scale, zero_point)`` from a calibrated
range that always includes 0 (so real zero, e.g. padding and ReLU's floor, is exact)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
WEIGHT_MAX = 127
"""Weights use [-127, 127]: symmetric, so -w is representable whenever w is."""


@dataclass(frozen=True)
class QParams:
    """A quantized tensor ``q`` stands for ``scale * (q - zero_point)``; ``scale`` is a
    float32 value."""

    scale: float
    zero_point: int

    def covers(self, other: QParams) -> bool:
        """Whether this tensor's real range contains all of ``other``'s."""
        return (self.real(INT8_MIN) <= other.real(INT8_MIN)
                and self.real(INT8_MAX) >= other.real(INT8_MAX))

    def real(self, q: int) -> float:
        return self.scale * (q - self.zero_point)


def activation_params(low: float, high: float) -> QParams:
    """Asymmetric int8 parameters of the range ``[low, high]`` widened to include 0.

    Raises:
        ValueError: a bound is not finite, or ``low > high``.
    """
    if not (np.isfinite(low) and np.isfinite(high)) or low > high:
        raise ValueError(f"a calibrated range must be finite with low <= high, got "
                         f"[{low!r}, {high!r}]")
    low, high = min(low, 0.0), max(high, 0.0)
    if high == low:
        return QParams(1.0, 0)
    scale = float(np.float32((high - low) / (INT8_MAX - INT8_MIN)))
    zero_point = int(np.clip(round(INT8_MIN - low / scale), INT8_MIN, INT8_MAX))
    return QParams(scale, zero_point)


WEIGHT_MODES = {"per_channel": (True, WEIGHT_MAX), "per_tensor": (False, WEIGHT_MAX),
                "per_channel_7bit": (True, 63), "per_tensor_7bit": (False, 63)}
"""Each weights mode: (a scale per output channel, the largest int8 magnitude). The 7-bit
modes keep weights in [-63, 63], which the relaxed kernels multiply with one relaxed dot
product per 16 (``wasm_kernels/templates/qlinear_tile.py``: 1.2x the full-range tile on
x86 without VNNI support in cranelift), at about half the weights' precision."""


def weight_params(weight: np.ndarray, weights: str) -> tuple[np.ndarray, np.ndarray]:
    """``(q, scale)``: ``weight`` (output channels first) as symmetric int8 ``q`` and its
    float32 ``scale``, (channels,) per channel else 0-d, for the ``WEIGHT_MODES`` mode
    ``weights``. A channel of zeros gets scale 1."""
    per_channel, most = WEIGHT_MODES[weights]
    w = np.asarray(weight, np.float32)
    axes = tuple(range(1, w.ndim)) if per_channel else None
    largest = np.abs(w).max(axis=axes) if w.size else np.float32(0)
    scale = np.where(largest > 0, largest / most, 1).astype(np.float32)
    shaped = scale.reshape((-1,) + (1,) * (w.ndim - 1)) if per_channel else scale
    q = np.clip(np.rint(w / shaped), -most, most).astype(np.int8)
    return q, np.asarray(scale, np.float32)


def bias_int32(bias: np.ndarray, input_scale: float, weight_scale: np.ndarray) -> np.ndarray:
    """A float bias as the int32 added to the accumulator (scale ``input_scale *
    weight_scale``, zero point 0), saturated to int32."""
    acc_scale = np.float32(input_scale) * np.asarray(weight_scale, np.float32)
    q = np.rint(np.asarray(bias, np.float64) / acc_scale)
    return np.clip(q, -(1 << 31), (1 << 31) - 1).astype(np.int32)
