"""Resizing: ``resample`` (the primitive: one axis, from source-row and weight tables),
``resample_tables`` (those tables for nearest, linear and cubic interpolation at given
source coordinates) and ``interpolate`` (torch's ``F.interpolate``, a composite).

A resize is separable: each resized axis is one ``resample`` whose (out, taps) tables
depend only on the sizes, so they are computed once and a batch axis may stay symbolic.
Coordinates are computed in float32, as torch and onnxruntime do, so nearest picks the
same rows at exact ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._dispatch import primitive

__all__ = ["antialias_tables", "interpolate", "resample", "resample_axes", "resample_tables"]

ROUNDINGS = ("ceil", "floor", "round_prefer_ceil", "round_prefer_floor")
"""How ``nearest`` turns a source coordinate into a row (ONNX's ``nearest_mode``)."""
CUBIC_A = -0.75
"""The cubic convolution constant of torch's bicubic and onnxruntime's default."""
_TORCH_MODES = {"nearest": 0, "nearest-exact": 0, "linear": 1, "bilinear": 2, "bicubic": 2,
                "trilinear": 3}


@primitive
def resample(input: np.ndarray, dim: int, index: np.ndarray, weight: np.ndarray
             ) -> np.ndarray:
    """Axis ``dim`` of ``input`` resampled: output row ``o`` is the sum over ``t`` of
    ``weight[o, t] * input[..., index[o, t], ...]``.

    Args:
        index: (out, taps) int32 rows of ``input`` along ``dim``, each in ``[0, size)``.
        weight: (out, taps) float32 weights.

    Raises:
        ValueError: the tables' shapes differ or are not 2-D, or an index is out of range.

    >>> x = np.array([[1.0, 3.0]], np.float32)
    >>> resample(x, 1, np.array([[0, 0], [0, 1], [1, 1]], np.int32),
    ...          np.array([[1, 0], [0.5, 0.5], [1, 0]], np.float32)).tolist()
    [[1.0, 2.0, 3.0]]
    """
    dim = dim % input.ndim
    if index.ndim != 2 or index.shape != weight.shape:
        raise ValueError(f"resample: index {index.shape} and weight {weight.shape} must both "
                         "be (out, taps)")
    if index.size and not (0 <= index.min() and index.max() < input.shape[dim]):
        raise ValueError(f"resample: index holds rows outside [0, {input.shape[dim]}) of "
                         f"axis {dim}")
    gathered = np.take(input, index, axis=dim)  # (..., out, taps, ...)
    scale = weight.reshape(weight.shape + (1,) * (input.ndim - dim - 1))
    return (gathered * scale).sum(axis=dim + 1, dtype=np.float32)


def _round(coords: np.ndarray, rounding: str) -> np.ndarray:
    half = np.float32(0.5)
    return {"floor": np.floor(coords), "ceil": np.ceil(coords),
            "round_prefer_floor": np.ceil(coords - half),
            "round_prefer_ceil": np.floor(coords + half)}[rounding]


def _cubic_weights(frac: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution weights of the 4 taps around each coordinate: (out, 4)."""
    k = np.float32(a)
    d = np.stack([frac + 1, frac, 1 - frac, 2 - frac], axis=1)  # distance of each tap
    near = ((k + 2) * d - (k + 3)) * d * d + 1
    far = ((k * d - 5 * k) * d + 8 * k) * d - 4 * k
    return np.where(d <= 1, near, far).astype(np.float32)


def resample_tables(coords: np.ndarray, size: int, mode: str, rounding: str = "floor",
                    cubic_a: float = CUBIC_A, exclude_outside: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The ``resample`` (index, weight) tables reading an axis of ``size`` at the source
    coordinates ``coords`` (one per output row); rows past either end read the edge row.

    Args:
        mode: ``nearest`` (rounded by ``rounding``, one of ``ROUNDINGS``), ``linear`` or
            ``cubic`` (Keys' kernel with ``cubic_a``; ``exclude_outside`` drops the taps
            outside the axis and renormalises the rest).

    Raises:
        ValueError: an unknown mode or rounding.

    >>> index, weight = resample_tables(np.array([0.0, 0.25], np.float32), 2, "linear")
    >>> index.tolist(), weight.tolist()
    ([[0, 1], [0, 1]], [[1.0, 0.0], [0.75, 0.25]])
    """
    coords = np.asarray(coords, np.float32)
    if mode == "nearest":
        if rounding not in ROUNDINGS:
            raise ValueError(f"unknown nearest rounding {rounding!r}; expected one of "
                             f"{list(ROUNDINGS)}")
        rows = _round(coords, rounding).astype(np.int64)[:, None]
        weight = np.ones(rows.shape, np.float32)
    elif mode == "linear":
        coords = np.clip(coords, 0, size - 1)
        first = np.floor(coords)
        frac = coords - first
        rows = first.astype(np.int64)[:, None] + np.arange(2)
        weight = np.stack([1 - frac, frac], axis=1).astype(np.float32)
    elif mode == "cubic":
        first = np.floor(coords)
        rows = first.astype(np.int64)[:, None] + np.arange(-1, 3)
        weight = _cubic_weights(coords - first, cubic_a)
        if exclude_outside:
            weight = np.where((rows >= 0) & (rows < size), weight, np.float32(0))
            weight = (weight / weight.sum(axis=1, keepdims=True)).astype(np.float32)
    else:
        raise ValueError(f"unknown resample mode {mode!r}; expected 'nearest', 'linear' or "
                         "'cubic'")
    return np.clip(rows, 0, size - 1).astype(np.int32), weight


_HALF_WIDTH = {"linear": 1, "cubic": 2}
"""Half the width of each antialiasing filter at scale 1, in source rows."""


def _filter(x: np.ndarray, mode: str, a: float) -> np.ndarray:
    """The triangle (``linear``) or Keys' cubic (``cubic``) filter at distances ``x``."""
    x = np.abs(x)
    if mode == "linear":
        return np.maximum(1 - x, 0).astype(np.float32)
    k = np.float32(a)
    near = ((k + 2) * x - (k + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * k
    return np.where(x < 1, near, np.where(x < 2, far, 0)).astype(np.float32)


def antialias_tables(coords: np.ndarray, size: int, scale: float, mode: str,
                     cubic_a: float = CUBIC_A, exclude_outside: bool = False
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The ``resample`` (index, weight) tables of an antialiased resize (ONNX's
    ``antialias=1``, Pillow's resampling): when shrinking by ``scale`` < 1, the ``linear``
    or ``cubic`` filter is stretched by ``1 / scale``, so each output row averages every
    source row under it; weights are normalised to sum to 1, and rows past either end read
    the edge row (``exclude_outside`` drops them instead).

    Args:
        coords: the source coordinate of each output row (float32), as for
            ``resample_tables``.

    Raises:
        ValueError: an unknown mode, or a scale that is not positive.

    >>> index, weight = antialias_tables(np.array([0.5], np.float32), 2, 0.5, "linear")
    >>> index.tolist(), weight.tolist()
    ([[0, 0, 1, 1, 1]], [[0.125, 0.375, 0.375, 0.125, 0.0]])
    """
    if mode not in _HALF_WIDTH:
        raise ValueError(f"unknown antialias mode {mode!r}; expected 'linear' or 'cubic'")
    if not scale > 0:
        raise ValueError(f"antialias scale {scale!r} must be positive")
    stretch = np.float32(1) / np.float32(scale)
    half = np.float32(_HALF_WIDTH[mode]) * max(stretch, np.float32(1))
    taps = int(np.ceil(half)) * 2 + 1
    step = np.float32(1) / stretch if stretch >= 1 else np.float32(1)
    centers = np.asarray(coords, np.float32) + np.float32(0.5)
    first = np.floor(centers - half + np.float32(0.5)).astype(np.int64)
    count = np.clip(np.floor(centers + half + np.float32(0.5)).astype(np.int64) - first, 0,
                    taps)
    rows = first[:, None] + np.arange(taps)
    # NOTE: float32 in onnxruntime's order, so the weights match it to the last bit or so.
    distance = (rows.astype(np.float32) - centers[:, None] + np.float32(0.5)) * step
    weight = np.where(np.arange(taps) < count[:, None], _filter(distance, mode, cubic_a), 0)
    if exclude_outside:
        weight = np.where((rows >= 0) & (rows < size), weight, 0)
    total = weight.sum(axis=1, keepdims=True, dtype=np.float32)
    weight = weight / np.where(total == 0, np.float32(1), total)
    return np.clip(rows, 0, size - 1).astype(np.int32), weight.astype(np.float32)


def resample_axes(input: Any, tables: dict[int, tuple[np.ndarray, np.ndarray]]) -> Any:
    """``resample`` each axis in ``tables`` ({axis: (index, weight)}), shrinking axes first
    and growing ones last, so each pass runs over as few elements as it can; the last axis
    (a gather of single floats, while others move whole rows) goes when the tensor is
    smallest: last among shrinking axes, first among growing ones.

    >>> resample_axes(np.ones((1, 2)), {}).shape
    (1, 2)
    """
    last = len(input.shape) - 1

    def cost(axis: int) -> tuple[bool, bool]:
        grows = len(tables[axis][0]) > input.shape[axis]
        return grows, (axis == last) != grows

    for axis in sorted(tables, key=cost):
        input = resample(input, axis, *tables[axis])
    return input


def _torch_coords(size: int, out: int, scale: float | None, mode: str,
                  align_corners: bool) -> np.ndarray:
    """torch's source coordinate of each output row (``area_pixel_compute_source_index``,
    and ``nearest_idx`` for the nearest modes) as float32."""
    dst = np.arange(out, dtype=np.float32)
    if align_corners:
        ratio = np.float32((size - 1) / (out - 1)) if out > 1 else np.float32(0)
        return dst * ratio
    ratio = np.float32(1 / scale if scale else size / out)
    if mode == "nearest":
        return dst * ratio
    coords = (dst + np.float32(0.5)) * ratio
    return coords if mode == "nearest-exact" else coords - np.float32(0.5)


def _out_sizes(shape: Sequence[Any], size: Any, scale_factor: Any, spatial: int
               ) -> tuple[list[int], list[float | None]]:
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * spatial
        if len(sizes) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(shape[2:])} and output size of {sizes}")
        return [int(s) for s in sizes], [None] * spatial
    scales = (list(scale_factor) if isinstance(scale_factor, (list, tuple))
              else [scale_factor] * spatial)
    if len(scales) != spatial:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of "
                         f"{list(shape[2:])} and scale_factor of shape {scales}")
    return [int(np.floor(float(d) * s)) for d, s in zip(shape[2:], scales)], scales


def interpolate(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Any:
    """Resize the spatial axes (all but the first two) as torch's ``F.interpolate``:
    modes ``nearest``, ``nearest-exact``, ``linear`` (3-D input), ``bilinear``, ``bicubic``
    (4-D) and ``trilinear`` (5-D); ``size`` or ``scale_factor``, one per axis or one for all
    (``recompute_scale_factor`` maps by the resulting sizes instead of the factor).

    Raises:
        ValueError: an unknown mode, a mode that does not fit the input's rank, both or
            neither of ``size`` and ``scale_factor``, ``align_corners`` with a nearest mode,
            a symbolic spatial axis, or ``antialias=True`` (not supported).

    >>> interpolate(np.array([[[1.0, 3.0]]], np.float32), scale_factor=2,
    ...             mode="linear").tolist()
    [[[1.0, 1.5, 2.5, 3.0]]]
    """
    if mode not in _TORCH_MODES:
        raise ValueError(f"interpolate: unknown mode {mode!r}; available: "
                         f"{sorted(_TORCH_MODES)}")
    spatial = len(input.shape) - 2
    if _TORCH_MODES[mode] and spatial != _TORCH_MODES[mode]:
        raise ValueError(f"interpolate: mode {mode!r} expects {_TORCH_MODES[mode] + 2}-D "
                         f"input, got shape {tuple(input.shape)}")
    if antialias:
        raise ValueError("interpolate: antialias=True is not supported")
    if align_corners is not None and not _TORCH_MODES[mode]:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    for axis, length in enumerate(input.shape[2:], 2):
        if not isinstance(length, (int, np.integer)):
            raise ValueError(f"interpolate: spatial axis {axis} has the symbolic size "
                             f"{length!r}; resized axes must have a fixed size")
    outs, scales = _out_sizes(input.shape, size, scale_factor, spatial)
    if recompute_scale_factor:
        scales = [None] * spatial
    kind = "nearest" if mode.startswith("nearest") else "cubic" if mode == "bicubic" else "linear"
    tables = {}
    for axis, (length, target, scale) in enumerate(zip(input.shape[2:], outs, scales), 2):
        if target != length:  # NOTE: torch copies an axis that keeps its size, whatever scale
            coords = _torch_coords(int(length), target, scale, mode, bool(align_corners))
            tables[axis] = resample_tables(coords, int(length), kind)
    return resample_axes(input, tables)
