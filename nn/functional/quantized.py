"""Quantized ops (issue #14): linear quantization of tensors and the integer products.

A quantized tensor ``q`` (int8 or uint8) stands for the real values ``(q - zero_point) *
scale``. ``scale`` (float32) and ``zero_point`` (the quantized dtype) are ndarrays: 0-d for
one pair per tensor, or 1-D with one pair per index of ``axis`` (per channel). They are
tensor inputs, not attributes, so a scale computed at run time (``dynamic_quantize_linear``)
feeds the ops that follow.

The products (``qlinear``, ``qconv2d``, ``qmatmul``) subtract the zero points, multiply and
accumulate in int32; an int32 ``bias`` (scale ``input_scale * weight_scale``, zero point 0)
is added to the accumulator. The accumulator ``acc`` then leaves in one of two ways:

- dequantized, when ``output_scale`` is None: ``acc * (input_scale * weight_scale)`` as
  float32, plus a float32 ``bias`` if one was given, then ``activation``;
- requantized, when ``output_scale`` and ``output_zero_point`` are given:
  ``saturate(round_half_even(float32(acc) * multiplier) + output_zero_point)`` with
  ``multiplier = float32(input_scale * weight_scale / output_scale)`` (float32 arithmetic,
  left to right, as onnxruntime computes it), in ``output_zero_point``'s dtype;
  ``activation`` clamps the result: ``"relu"`` to ``>= output_zero_point``, ``"relu6"``
  also to ``<= quantize(6)``, which equals quantizing the clamped real value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dispatch import primitive
from .conv import Padding, conv2d

__all__ = ["dequantize_linear", "dynamic_quantize_linear", "qconv2d", "qlinear", "qmatmul",
           "quantize_linear"]

QUANTIZED_RANGES: dict[str, tuple[int, int]] = {"uint8": (0, 255), "int8": (-128, 127)}
"""The quantized dtypes and their ranges (what ``saturate`` clamps to)."""

ACTIVATIONS = ("", "relu", "relu6")
"""The activations the quantized products apply (as a clamp when requantized)."""


def _along(param: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A 0-d or 1-D ``param`` shaped to broadcast along ``axis`` of an ``ndim`` tensor."""
    param = np.asarray(param)
    if param.ndim == 0:
        return param
    shape = [1] * ndim
    shape[axis % ndim] = param.shape[0]
    return param.reshape(shape)


def _saturate(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    low, high = QUANTIZED_RANGES[np.dtype(dtype).name]
    return np.clip(values, low, high).astype(dtype)


@primitive
def quantize_linear(input: np.ndarray, scale: np.ndarray, zero_point: np.ndarray,
                    axis: int = 1) -> np.ndarray:
    """``saturate(round_half_even(input / scale) + zero_point)`` in ``zero_point``'s dtype
    (int8 or uint8), as ONNX QuantizeLinear; a 1-D scale and zero point apply along ``axis``.

    >>> quantize_linear(np.array([-1.0, 0.26, 9.0], np.float32), np.array(0.1, np.float32),
    ...                 np.array(10, np.uint8))
    array([  0,  13, 100], dtype=uint8)
    """
    zero_point = np.asarray(zero_point)
    ratio = (np.asarray(input, np.float32)
             / _along(np.asarray(scale, np.float32), np.ndim(input), axis))
    return _saturate(np.rint(ratio) + _along(zero_point, np.ndim(input), axis),
                     zero_point.dtype)


@primitive
def dequantize_linear(input: np.ndarray, scale: np.ndarray, zero_point: np.ndarray,
                      axis: int = 1) -> np.ndarray:
    """``(input - zero_point) * scale`` as float32, as ONNX DequantizeLinear; input is int8,
    uint8 or int32 (a bias, zero point 0).

    >>> dequantize_linear(np.array([0, 13], np.uint8), np.array(0.5, np.float32),
    ...                   np.array(10, np.uint8))
    array([-5. ,  1.5], dtype=float32)
    """
    ndim = np.ndim(input)
    shifted = (np.asarray(input, np.int32)
               - _along(np.asarray(zero_point, np.int32), ndim, axis)).astype(np.float32)
    return shifted * _along(np.asarray(scale, np.float32), ndim, axis)


@primitive
def dynamic_quantize_linear(input: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y, scale, zero_point)``: ``input`` quantized to uint8 over the range of its values
    widened to include 0, as ONNX DynamicQuantizeLinear. ``scale = (max - min) / 255``
    (1.0 for an all-zero input, so that it stays finite), ``zero_point =
    saturate(round_half_even(-min / scale))``; scale and zero point are 0-d.

    >>> y, scale, zero_point = dynamic_quantize_linear(np.array([-1.0, 0.0, 1.0], np.float32))
    >>> y, zero_point
    (array([  0, 127, 254], dtype=uint8), array(127, dtype=uint8))
    """
    values = np.asarray(input, np.float32)
    low = np.minimum(np.float32(0), values.min(initial=np.float32(0)))
    high = np.maximum(np.float32(0), values.max(initial=np.float32(0)))
    scale = np.float32((high - low) / np.float32(255)) if high > low else np.float32(1)
    zero_point = _saturate(np.rint(np.float32(0) - low / scale), np.dtype(np.uint8))
    y = _saturate(np.rint(values / scale) + zero_point.astype(np.int32), np.dtype(np.uint8))
    return y, np.asarray(scale, np.float32), np.asarray(zero_point, np.uint8)


def _finish(acc: np.ndarray, input_scale: np.ndarray, weight_scale: np.ndarray,
            bias: np.ndarray | None, output_scale: np.ndarray | None,
            output_zero_point: np.ndarray | None, activation: str, axis: int) -> np.ndarray:
    """Dequantize or requantize the int32 accumulator ``acc`` (its channels on ``axis``) as
    the module docstring says.

    Raises:
        ValueError: ``activation`` is not one of ``ACTIVATIONS``.
    """
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation {activation!r} is not one of {list(ACTIVATIONS)}")
    if bias is not None and np.asarray(bias).dtype == np.int32:
        acc = acc + _along(bias, acc.ndim, axis)
        bias = None
    scale = np.float32(input_scale) * _along(np.asarray(weight_scale, np.float32), acc.ndim,
                                             axis)
    if output_scale is None:
        real = acc.astype(np.float32) * scale
        if bias is not None:
            real = real + _along(np.asarray(bias, np.float32), acc.ndim, axis)
        if activation:
            real = np.clip(real, np.float32(0), np.float32(6) if activation == "relu6" else None)
        return real.astype(np.float32)
    zero_point = np.asarray(output_zero_point)
    offset = zero_point.astype(np.int32)
    multiplier = (scale / np.float32(output_scale)).astype(np.float32)
    q = np.rint(acc.astype(np.float32) * multiplier) + offset
    low, high = QUANTIZED_RANGES[zero_point.dtype.name]
    if activation:
        low = max(low, int(offset))
    if activation == "relu6":
        high = min(high, int(np.rint(np.float32(6) / np.float32(output_scale))) + int(offset))
    return np.clip(q, low, high).astype(zero_point.dtype)


def _centered(q: np.ndarray, zero_point: np.ndarray, axis: int = -1) -> np.ndarray:
    """``q - zero_point`` as int32 (a 1-D zero point along ``axis``)."""
    return (np.asarray(q, np.int32)
            - _along(np.asarray(zero_point, np.int32), np.ndim(q), axis))


@primitive
def qlinear(input: np.ndarray, input_scale: np.ndarray, input_zero_point: np.ndarray,
            weight: np.ndarray, weight_scale: np.ndarray, weight_zero_point: np.ndarray,
            bias: np.ndarray | None = None, output_scale: np.ndarray | None = None,
            output_zero_point: np.ndarray | None = None, activation: str = "") -> np.ndarray:
    """Quantized ``linear``: input (..., in) int8/uint8, weight (out, in) int8 with a scale
    and zero point per tensor or per output channel (out,); bias (out,) int32 or float32.
    ``acc = (input - input_zero_point) @ (weight - weight_zero_point).T`` in int32, then
    dequantized or requantized (module docstring).

    >>> one = np.array(1.0, np.float32)
    >>> qlinear(np.array([[3, 4]], np.uint8), one, np.array(1, np.uint8),
    ...         np.array([[1, -1]], np.int8), one, np.array(0, np.int8))
    array([[-1.]], dtype=float32)
    """
    acc = _centered(input, input_zero_point) @ _centered(weight, weight_zero_point, 0).T
    return _finish(acc.astype(np.int32), input_scale, weight_scale, bias, output_scale,
                   output_zero_point, activation, -1)


@primitive
def qconv2d(input: np.ndarray, input_scale: np.ndarray, input_zero_point: np.ndarray,
            weight: np.ndarray, weight_scale: np.ndarray, weight_zero_point: np.ndarray,
            bias: np.ndarray | None = None, output_scale: np.ndarray | None = None,
            output_zero_point: np.ndarray | None = None, stride: Any = 1,
            padding: Padding = 0, dilation: Any = 1, groups: int = 1,
            activation: str = "") -> np.ndarray:
    """Quantized ``conv2d``: input (N, C, H, W) int8/uint8, weight (O, C / groups, KH, KW)
    int8 with a scale and zero point per tensor or per output channel (O,); padding stands
    for real zeros (the input's zero point). The int32 accumulator is dequantized or
    requantized per output channel (module docstring).

    >>> one = np.array(1.0, np.float32)
    >>> qconv2d(np.full((1, 1, 2, 2), 5, np.uint8), one, np.array(3, np.uint8),
    ...         np.ones((1, 1, 2, 2), np.int8), one, np.array(0, np.int8))
    array([[[[8.]]]], dtype=float32)
    """
    x = _centered(input, input_zero_point).astype(np.float64)
    w = _centered(weight, weight_zero_point, 0).astype(np.float64)
    # NOTE: float64 holds every int32 accumulator exactly.
    acc = conv2d(x, w, None, stride, padding, dilation, groups)
    return _finish(acc.astype(np.int64).astype(np.int32), input_scale, weight_scale, bias,
                   output_scale, output_zero_point, activation, 1)


@primitive
def qmatmul(input: np.ndarray, input_scale: np.ndarray, input_zero_point: np.ndarray,
            other: np.ndarray, other_scale: np.ndarray, other_zero_point: np.ndarray,
            output_scale: np.ndarray | None = None,
            output_zero_point: np.ndarray | None = None) -> np.ndarray:
    """Quantized ``matmul`` of two activations (attention scores, context), each int8/uint8
    with one scale and zero point: ``acc = (input - zp) @ (other - zp)`` in int32 with
    matmul's batch broadcasting, then dequantized or requantized (module docstring).

    >>> one = np.array(1.0, np.float32)
    >>> qmatmul(np.array([[2, 3]], np.uint8), one, np.array(1, np.uint8),
    ...         np.array([[1], [2]], np.int8), one, np.array(0, np.int8))
    array([[5.]], dtype=float32)
    """
    acc = np.matmul(_centered(input, input_zero_point), _centered(other, other_zero_point))
    return _finish(acc.astype(np.int32), input_scale, other_scale, None, output_scale,
                   output_zero_point, "", -1)
