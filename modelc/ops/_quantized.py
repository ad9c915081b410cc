"""What the quantized ops share: the checks of a (scale, zero point) pair and the calls of
the ``quantize`` kernels. Semantics: ``nn/functional/quantized.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from wasm_kernels import abi

from ..errors import CompileError

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Shape, Value

Push = Callable[[], None]
"""Pushes one address (``partial(ctx.address, value)``, ``partial(ctx.scratch, node, i)``)."""
QUANTIZED = ("int8", "uint8")
"""The dtypes of quantized tensors and zero points."""
FLOAT = "float32"


def check_pair(op: str, what: str, scale: tuple[Shape, str], zero_point: tuple[Shape, str],
               channels: object = None) -> None:
    """Raise unless ``scale`` and ``zero_point`` (shape, dtype) are a float32 scale and an
    int8/uint8 zero point, each 0-d or (channels,) when ``channels`` is given.

    Raises:
        CompileError: naming ``op``, the pair (``what``) and what was expected.
    """
    (scale_shape, scale_dtype), (zero_shape, zero_dtype) = scale, zero_point
    shapes = [()] + ([(channels,)] if channels is not None else [])
    if scale_dtype != FLOAT or zero_dtype not in QUANTIZED:
        raise CompileError(f"{op}: {what} scale must be float32 and its zero point int8 or "
                           f"uint8, got {scale_dtype} and {zero_dtype}")
    if tuple(scale_shape) not in shapes or tuple(zero_shape) not in shapes:
        raise CompileError(f"{op}: {what} scale and zero point must have shapes among "
                           f"{[list(s) for s in shapes]}, got {list(scale_shape)} and "
                           f"{list(zero_shape)}")


def per_channel(value: Value, channels: int, dtype: str, op: str) -> np.ndarray:
    """A constant 0-d or (channels,) parameter as a (channels,) array of ``dtype``.

    Raises:
        CompileError: the parameter is computed at run time.
    """
    if value.data is None:
        raise CompileError(f"{op}: {value.name} must be a constant (a weight's scale and "
                           "zero point are fixed when the weight is packed)")
    return np.broadcast_to(np.asarray(value.data, dtype), (channels,)).copy()


def split(shape: Shape, axis: int | None) -> tuple[Shape, int, Shape]:
    """``(outer dims, channels, inner dims)`` of a per-axis quantization (``axis`` None: one
    channel over the whole tensor)."""
    if axis is None:
        return (), 1, tuple(shape)
    channels = shape[axis]
    if not isinstance(channels, int):
        raise CompileError(f"the quantization axis {axis} of {list(shape)} must be a fixed "
                           f"size, got {channels!r}")
    return tuple(shape[:axis]), channels, tuple(shape[axis + 1:])


def quantize(ctx: LowerContext, source: Push, scale: Push, zero_point: Push,
             target: Value, shape: Shape, axis: int | None) -> None:
    """Call ``f32_quantize_linear``: ``source``, ``scale`` and ``zero_point`` are callables pushing
    their addresses; ``target`` gets ``shape``'s elements in its dtype."""
    outer, channels, inner = split(shape, axis)
    for push in (source, scale, zero_point):
        push()
    ctx.address(target)
    ctx.numel(outer)
    ctx.push(channels)
    ctx.numel(inner)
    ctx.push(int(target.dtype == "int8"))
    ctx.call("f32_quantize_linear")


def dequantize(ctx: LowerContext, source: Value, scale: Push, zero_point: Push,
               target: Push, axis: int | None) -> None:
    """Call ``q{u,s}8_dequantize_linear`` of ``source`` into the address ``target`` pushes."""
    outer, channels, inner = split(source.shape, axis)
    ctx.address(source)
    for push in (scale, zero_point, target):
        push()
    ctx.numel(outer)
    ctx.push(channels)
    ctx.numel(inner)
    ctx.call(abi.find("quantize", "dequantize_linear", dtype=source.dtype).name)


def real(values: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """Dequantized constant ``values`` with per-channel parameters along axis 0."""
    shape = (-1,) + (1,) * (values.ndim - 1)
    return ((values.astype(np.int32) - np.asarray(zero_point, np.int32).reshape(shape))
            .astype(np.float32) * np.asarray(scale, np.float32).reshape(shape))

