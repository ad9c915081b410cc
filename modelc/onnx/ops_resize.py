"""ONNX Resize (opsets 10-19) and Upsample (opset 9): one ``resample`` per resized axis.

The source coordinate of each output row follows ``coordinate_transformation_mode`` in
float32, as onnxruntime computes it; ``nn.functional.resize.resample_tables`` turns the
coordinates into tables for ``nearest`` (by ``nearest_mode``), ``linear`` and ``cubic``.
Opset 10's Resize and Upsample use asymmetric coordinates and onnxruntime's rounding for
them: down when enlarging, up when shrinking. ``antialias=1`` (opset 18) stretches the
linear and cubic filters when shrinking (``antialias_tables``); ``tf_crop_and_resize``
reads a crop given by ``roi`` and writes ``extrapolation_value`` where it leaves the input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F
from nn.functional.resize import antialias_tables, resample_axes, resample_tables

from .fold import is_known
from .node import OnnxNode

_HALF = np.float32(0.5)
_COORDINATES: dict[str, Callable[[np.ndarray, int, int, np.float32], np.ndarray]] = {
    "half_pixel": lambda x, size, out, scale: (x + _HALF) / scale - _HALF,
    "pytorch_half_pixel": lambda x, size, out, scale: ((x + _HALF) / scale - _HALF
                                                       if out > 1 else 0 * x),
    "align_corners": lambda x, size, out, scale: (x * np.float32(size - 1) / np.float32(out - 1)
                                                  if out > 1 else 0 * x),
    "asymmetric": lambda x, size, out, scale: x / scale,
    "tf_half_pixel_for_nn": lambda x, size, out, scale: (x + _HALF) / scale,
    "half_pixel_symmetric": lambda x, size, out, scale: (
        np.float32(size / 2) * (1 - np.float32(out) / (scale * np.float32(size)))
        + (x + _HALF) / scale - _HALF),
}
_CROP = "tf_crop_and_resize"
_MODES = ("cubic", "linear", "nearest")
_POLICIES = ("not_larger", "not_smaller", "stretch")


def _present(n: OnnxNode, index: int, what: str) -> np.ndarray | None:
    """Input ``index`` as a known value, or None when omitted or empty (opset 11-12
    models pass an empty ``scales`` next to ``sizes``)."""
    if not n.has(index):
        return None
    value = n.known(index, what).reshape(-1)
    return value if value.size else None


def _require_static(n: OnnxNode, shape: tuple[Any, ...], axis: int, resized: bool) -> None:
    if resized and not isinstance(shape[axis], int):
        raise n.error(f"axis {axis} of the input has the symbolic size {shape[axis]!r}; "
                      "resized axes need a fixed size (set it with input_shapes)")


def _targets(n: OnnxNode, shape: tuple[Any, ...], axes: list[int], scales: np.ndarray | None,
             sizes: np.ndarray | None) -> tuple[list[Any], list[np.float32]]:
    """Output size and scale of each axis in ``axes``."""
    given = scales if scales is not None else sizes
    if given is None or (scales is not None and sizes is not None):
        raise n.error("exactly one of scales and sizes must be given")
    if len(given) != len(axes):
        raise n.error(f"{'scales' if scales is not None else 'sizes'} {given.tolist()} must "
                      f"have one entry per resized axis ({len(axes)})")
    if scales is not None:
        factors = [np.float32(s) for s in scales]
        if any(f <= 0 for f in factors):
            raise n.error(f"scales {scales.tolist()} must be positive")
        for a, f in zip(axes, factors):
            _require_static(n, shape, a, f != 1)
        return [shape[a] if f == 1 else int(np.floor(np.float32(shape[a]) * f))
                for a, f in zip(axes, factors)], factors
    policy = n.attr("keep_aspect_ratio_policy", "stretch")
    if policy not in _POLICIES:
        raise n.error(f"unknown keep_aspect_ratio_policy {policy!r}; expected one of "
                      f"{list(_POLICIES)}")
    outs = [s if isinstance(s, str) else int(s) for s in given]
    for a, o in zip(axes, outs):
        _require_static(n, shape, a, o != shape[a] or policy != "stretch")
    if policy != "stretch":
        pick = min if policy == "not_larger" else max
        common = pick(np.float32(o) / np.float32(shape[a]) for a, o in zip(axes, outs))
        outs = [int(np.floor(np.float32(shape[a]) * common + _HALF)) for a in axes]
        return outs, [common] * len(axes)
    return outs, [np.float32(1) if o == shape[a] else np.float32(o) / np.float32(shape[a])
                  for a, o in zip(axes, outs)]


def _settings(n: OnnxNode, scale: np.float32) -> tuple[str, str, str]:
    """(mode, coordinate transformation, nearest rounding) of ``n`` for an axis scaled by
    ``scale``."""
    mode = n.attr("mode", "nearest")
    if mode not in _MODES:
        raise n.error(f"unknown mode {mode!r}; expected one of {list(_MODES)}")
    if n.op_type == "Upsample" or n.opset < 11:
        if mode == "cubic":
            raise n.error(f"mode 'cubic' needs Resize at opset 11 or later, got opset "
                          f"{n.opset}")
        return mode, "asymmetric", "ceil" if scale < 1 else "floor"
    transform = n.attr("coordinate_transformation_mode", "half_pixel")
    if transform not in _COORDINATES and transform != _CROP:
        raise n.error(f"unknown coordinate_transformation_mode {transform!r}; expected one of "
                      f"{sorted([*_COORDINATES, _CROP])}")
    return mode, transform, n.attr("nearest_mode", "round_prefer_floor")


def _roi(n: OnnxNode, axes: list[int]) -> np.ndarray:
    """The (start, end) fractions of ``tf_crop_and_resize``'s crop of each axis in ``axes``:
    (len(axes), 2) float32 from input 1 (``roi``).

    Raises:
        CompileError: ``roi`` is missing or does not hold a start and an end per axis.
    """
    roi = _present(n, 1, "roi")
    if roi is None or len(roi) != 2 * len(axes):
        raise n.error(f"coordinate_transformation_mode {_CROP!r} needs roi with a start and an "
                      f"end per resized axis ({2 * len(axes)} values), got "
                      f"{None if roi is None else roi.tolist()}")
    return roi.astype(np.float32).reshape(2, -1).T


def _crop_coords(out: int, size: int, start: np.float32, end: np.float32) -> np.ndarray:
    """``tf_crop_and_resize``'s source coordinates: ``out`` rows spread evenly over the crop
    ``[start, end]`` of an axis of ``size`` rows (float32 in onnxruntime's order)."""
    last = np.float32(size - 1)
    if out == 1:
        return np.array([np.float32(0.5 * (float(start) + float(end)) * float(last))])
    x = np.arange(out, dtype=np.float32)
    return start * last + x * (end - start) * last / np.float32(out - 1)


def _tables(n: OnnxNode, coords: np.ndarray, size: int, scale: np.float32
            ) -> tuple[np.ndarray, np.ndarray]:
    """The ``resample`` tables of one axis read at ``coords``: antialiased (a filter
    stretched when shrinking) for ``linear`` and ``cubic`` when ``antialias=1``."""
    mode, _, rounding = _settings(n, scale)
    cubic_a, exclude = n.attr("cubic_coeff_a", -0.75), bool(n.attr("exclude_outside", 0))
    if n.attr("antialias", 0):
        if mode == "nearest":  # NOTE: onnxruntime and the reference evaluator refuse it too
            raise n.error("antialias=1 applies to modes 'linear' and 'cubic', not 'nearest'")
        return antialias_tables(coords, size, float(scale), mode, cubic_a, exclude)
    return resample_tables(coords, size, mode, rounding, cubic_a, exclude)


def resize(n: OnnxNode) -> Any:
    x = n.input(0)
    shape, rank = tuple(x.shape), n.rank()
    if n.op_type == "Upsample" or n.opset < 11:
        scales, sizes, axes = _present(n, 1, "scales"), None, list(range(rank))
    else:
        scales, sizes = _present(n, 2, "scales"), _present(n, 3, "sizes")
        axes = [n.axis(a) for a in n.attr("axes", range(rank))]
    crop = n.opset >= 11 and n.attr("coordinate_transformation_mode") == _CROP
    roi = _roi(n, axes) if crop else None
    outs, factors = _targets(n, shape, axes, scales, sizes)
    tables, outside = {}, []
    for k, (axis, out, scale) in enumerate(zip(axes, outs, factors)):
        whole = roi is None or tuple(roi[k]) == (0, 1)
        if out == shape[axis] and scale == 1 and whole:
            continue
        if not isinstance(out, int) or out < 1:
            raise n.error(f"axis {axis} would have size {out!r}; expected a positive int")
        _require_static(n, shape, axis, True)
        if roi is None:
            coords = _COORDINATES[_settings(n, scale)[1]](np.arange(out, dtype=np.float32),
                                                          shape[axis], out, scale)
        else:
            coords = _crop_coords(out, shape[axis], *roi[k])
            outside.append((axis, (coords < 0) | (coords > shape[axis] - 1)))
        tables[axis] = _tables(n, coords, shape[axis], scale)
    y = resample_axes(x, tables)
    return _extrapolate(n, y, outside) if outside else y


def _extrapolate(n: OnnxNode, y: Any, outside: list[tuple[int, np.ndarray]]) -> Any:
    """``y`` with ``extrapolation_value`` wherever a cropped axis reads outside its input
    (``tf_crop_and_resize``); ``outside`` holds each axis's mask of such output rows."""
    rank = len(y.shape)
    mask = np.zeros((1,) * rank, np.bool_)
    for axis, rows in outside:
        mask = mask | rows.reshape([-1 if a == axis else 1 for a in range(rank)])
    if not mask.any():
        return y
    value = np.array(n.attr("extrapolation_value", 0.0), np.float32)
    if is_known(y):
        return np.where(mask, value, y)
    return F.where(mask, value, y)


def grid_sample(n: OnnxNode) -> Any:
    """GridSample (opsets 16-22): ``nn.functional.grid_sample``; opset 20 renamed the modes
    ``linear`` and ``cubic`` and allowed 5-D inputs."""
    x, grid = n.input(0), n.input(1)
    mode = {"linear": "bilinear", "cubic": "bicubic"}.get(n.attr("mode", "bilinear"),
                                                          n.attr("mode", "bilinear"))
    if x.dtype != np.float32 or grid.dtype != np.float32:
        raise n.error(f"samples float32 inputs on a float32 grid, got {x.dtype} on {grid.dtype}")
    try:
        return F.grid_sample(x, grid, mode, n.attr("padding_mode", "zeros"),
                             bool(n.attr("align_corners", 0)))
    except ValueError as err:
        raise n.error(str(err)) from None


OPS = {"GridSample": grid_sample, "Resize": resize, "Upsample": resize}
