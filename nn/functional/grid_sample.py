"""``grid_sample``: the input read at the points a grid gives (torch's ``grid_sample``, ONNX
GridSample), for 4-D and 5-D inputs, written in arithmetic, ``where`` and row gathers
(``embedding``), so it needs no kernel of its own.

The input is viewed as a table of rows, one per batch and spatial position, each row its
channels; every sampling tap of every output point is a row number, and the output is the
taps' rows weighted by the interpolation coefficients. With ``padding_mode="zeros"`` a tap
outside the input reads an extra row of zeros.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .elementwise import add, cast, div, eq, ge, gt, lt, maximum, minimum, mul, sub, where
from .rounding import floor, round
from .shape import concat, embedding, permute, reshape, slice

__all__ = ["grid_sample"]

MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")
_CUBIC_ALPHA = -0.75
"""Keys' cubic convolution coefficient (torch and ONNX)."""


def grid_sample(input: Any, grid: Any, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool = False) -> Any:
    """``input`` (N, C, *S) sampled at ``grid`` (N, *So, len(S)): output (N, C, *So).

    ``grid[..., 0]`` is the coordinate along the last axis of ``S`` (x), each in [-1, 1]
    from one edge to the other: the centres of the corner pixels when ``align_corners``,
    else their outer edges. ``mode`` interpolates (``bicubic`` on 4-D inputs only);
    ``padding_mode`` says what a point outside reads: zeros, the nearest border pixel, or
    the input reflected at its borders.

    Raises:
        ValueError: an unknown mode, a grid whose last axis does not match the input's
            spatial rank, or a symbolic batch or spatial size.

    >>> x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    >>> grid_sample(x, np.zeros((1, 1, 1, 2), np.float32)).tolist()
    [[[[1.5]]]]
    """
    if mode not in MODES or padding_mode not in PADDING_MODES:
        raise ValueError(f"grid_sample: mode {mode!r} / padding_mode {padding_mode!r}; expected "
                         f"one of {list(MODES)} / {list(PADDING_MODES)}")
    sizes, points = _fixed(input.shape, "input"), _fixed(grid.shape, "grid")
    batch, channels, space = sizes[0], sizes[1], sizes[2:]
    rank = len(space)
    if rank not in (2, 3) or points[-1] != rank or points[0] != batch:
        raise ValueError(f"grid_sample: grid {list(points)} must be (N, *out, {rank}) for "
                         f"input {list(sizes)} with N={batch} and 2 or 3 spatial axes")
    if mode == "bicubic" and rank != 2:
        raise ValueError("grid_sample: bicubic samples 4-D inputs only")
    count = math.prod(points[:-1])
    rows = math.prod(space)
    # (N * prod(S) [+ 1], C): one row per position; with zeros padding, a last row of zeros
    table = reshape(permute(input, [0, *range(2, rank + 2), 1]), (batch * rows, channels))
    if padding_mode == "zeros":
        table = concat([table, np.zeros((1, channels), np.float32)], dim=0)
    flat = reshape(grid, (count, rank))  # (N * prod(So), rank)
    base = np.repeat(np.arange(batch, dtype=np.int64) * rows, count // batch).reshape(count, 1)
    strides = [math.prod(space[a + 1:]) for a in range(rank)]
    taps = []
    for axis, size in enumerate(space):
        # NOTE: the grid lists coordinates from the last spatial axis to the first
        coord = slice(flat, 1, rank - 1 - axis, rank - axis)
        taps.append(_axis_taps(coord, size, mode, padding_mode, align_corners))
    sentinel = batch * rows
    total: Any = None
    for combo in itertools.product(*taps):
        index: Any = base
        weight = None
        for stride, (position, coefficient) in zip(strides, combo):
            index = add(index, mul(cast(position, np.int64), stride))
            weight = coefficient if weight is None else mul(weight, coefficient)
        if padding_mode == "zeros":
            for size, (position, _) in zip(space, combo):
                index = where(ge(position, 0.0), index, sentinel)
                index = where(lt(position, float(size)), index, sentinel)
        gathered = embedding(reshape(index, (count,)), table)  # (N * prod(So), C)
        term = gathered if weight is None else mul(gathered, weight)
        total = term if total is None else add(total, term)
    out = reshape(total, (batch, *points[1:-1], channels))
    return permute(out, [0, rank + 1, *range(1, rank + 1)])


def _fixed(shape: Sequence[Any], what: str) -> tuple[int, ...]:
    if not all(isinstance(d, (int, np.integer)) for d in shape):
        raise ValueError(f"grid_sample: {what} shape {list(shape)} must be fixed")
    return tuple(int(d) for d in shape)


def _axis_taps(coord: Any, size: int, mode: str, padding_mode: str, align_corners: bool
               ) -> list[tuple[Any, Any]]:
    """The taps along one axis, each (position, a float holding an integer; coefficient, or
    None for nearest), from normalized coordinates ``coord`` (count, 1)."""
    if align_corners:
        x = mul(mul(add(coord, 1.0), 0.5), float(size - 1))
        low, high = 0.0, float(size - 1)
    else:
        x = mul(sub(mul(add(coord, 1.0), float(size)), 1.0), 0.5)
        low, high = -0.5, size - 0.5
    if mode == "nearest":
        x = round(x)
    if padding_mode == "border" and mode != "bicubic":
        # NOTE: bicubic clamps each tap, not the point (torch and onnxruntime; onnx's
        # reference evaluator clamps the point too, which moves the taps near a border)
        clamped = minimum(maximum(x, 0.0), float(size - 1))
        x = where(lt(x, low), clamped, where(gt(x, high), clamped, x))
    elif padding_mode == "reflection":
        x = _reflect(x, low, high)
    if mode == "nearest":
        return [_tap(x, None, size, padding_mode, low, high)]
    start = floor(x)
    t = sub(x, start)
    if mode == "bilinear":
        coefficients = [sub(1.0, t), t]
        offsets = [0, 1]
    else:
        coefficients = _cubic(t)
        offsets = [-1, 0, 1, 2]
    return [_tap(add(start, float(offset)), coefficient, size, padding_mode, low, high)
            for offset, coefficient in zip(offsets, coefficients)]


def _tap(position: Any, coefficient: Any, size: int, padding_mode: str, low: float,
         high: float) -> tuple[Any, Any]:
    """One tap at integral ``position``: kept as it is (zeros: the caller points it at the
    row of zeros when outside), clamped into the input (border) or reflected into it."""
    if padding_mode == "zeros":
        return position, coefficient
    if padding_mode == "reflection":
        # NOTE: truncation towards zero, as a C++ int conversion; then kept in range
        position = cast(cast(_reflect(position, low, high), np.int64), np.float32)
    return minimum(maximum(position, 0.0), float(size - 1)), coefficient


def _reflect(x: Any, low: float, high: float) -> Any:
    """``x`` reflected at ``low`` and ``high`` (repeatedly) until it lies between them."""
    span = high - low
    if span == 0:  # a single pixel with align_corners: every point reflects onto it
        return mul(x, 0.0)
    below = lt(x, low)
    beyond = where(below, sub(low, x), sub(x, high))
    turns = floor(div(beyond, span))
    rest = sub(beyond, mul(turns, span))
    even = eq(sub(turns, mul(floor(mul(turns, 0.5)), 2.0)), 0.0)
    reflected = where(eq(below, even), add(rest, low), sub(high, rest))
    return where(below, reflected, where(gt(x, high), reflected, x))


def _cubic(t: Any) -> list[Any]:
    """Keys' four cubic coefficients at fraction ``t`` for the taps at -1, 0, 1 and 2."""
    a = _CUBIC_ALPHA

    def outer(d: Any) -> Any:  # |d| in [1, 2]
        return sub(mul(add(mul(sub(mul(d, a), 5 * a), d), 8 * a), d), 4 * a)

    def inner(d: Any) -> Any:  # |d| in [0, 1]
        return add(mul(mul(sub(mul(d, a + 2), a + 3), d), d), 1.0)

    return [outer(add(t, 1.0)), inner(t), inner(sub(1.0, t)), outer(sub(2.0, t))]
