"""``argmax`` and ``argmin`` (int64 indices), composites of reductions and comparisons: the
first (or last) position whose value equals the extreme, found with one more ``amax`` over
position weights, then cast to int64. Integer inputs take a ``topk`` of one instead, which
compares them exactly (a float32 ``amax`` would round large ones together)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import add, cast, eq, mul, neg
from .reduction import amax, topk
from .shape import reshape, slice

__all__ = ["argmax", "argmin"]


def _integer_arg(input: Any, dim: int, keepdim: bool, last: bool, largest: bool) -> Any:
    """The index of the first (or ``last``) extreme of integers along ``dim``, from the
    ``topk`` of one (whose ties keep the lower index) of the axis, reversed for ``last``."""
    n = input.shape[dim]
    if np.dtype(input.dtype).itemsize < 4:  # NOTE: widened exactly, for topk's kernels
        input = cast(input, np.int32)
    _, index = topk(slice(input, dim, None, None, -1) if last else input, 1, dim, largest)
    if last:
        index = add(mul(index, -1), n - 1)
    if keepdim:
        return index
    return reshape(index, tuple(input.shape[:dim]) + tuple(input.shape[dim + 1:]))


def _arg(input: Any, dim: int | None, keepdim: bool, last: bool, op: str) -> Any:
    if dim is None:
        input, dim = reshape(input, (-1,)), 0
    rank = len(input.shape)
    if not -rank <= dim < rank:
        raise ValueError(f"{op}: dim {dim} is out of range for rank {rank}")
    dim %= rank
    n = input.shape[dim]
    if not isinstance(n, (int, np.integer)):
        raise ValueError(f"{op} over axis {dim} needs a fixed size, got the symbolic {n!r}")
    if np.dtype(input.dtype).kind in "iu":
        return _integer_arg(input, dim, keepdim, last, op == "argmax")
    at_max = cast(eq(input, amax(input, dim, keepdim=True)), np.float32)
    # NOTE: the largest weight wins: n - i prefers the first position, i + 1 the last.
    positions = np.arange(n, dtype=np.float32)
    weights = (positions + 1 if last else n - positions).reshape((n,) + (1,) * (rank - dim - 1))
    best = amax(at_max * weights, dim, keepdim=keepdim)
    index = best - 1.0 if last else n - best
    return cast(index, np.int64)


def argmax(input: Any, dim: int | None = None, keepdim: bool = False,
           select_last_index: bool = False) -> Any:
    """Index of the largest value along ``dim`` (over the flattened input when None), the
    first one on ties unless ``select_last_index`` (ONNX's attribute), as int64.

    Raises:
        ValueError: ``dim`` out of range, or the axis is symbolic.

    >>> argmax(np.array([[1.0, 3.0, 3.0]], np.float32), 1).tolist()
    [1]
    """
    return _arg(input, dim, keepdim, select_last_index, "argmax")


def argmin(input: Any, dim: int | None = None, keepdim: bool = False,
           select_last_index: bool = False) -> Any:
    """Index of the smallest value along ``dim``, as ``argmax`` of the negation.

    Raises:
        ValueError: ``dim`` out of range, or the axis is symbolic.

    >>> argmin(np.array([[1.0, 0.0, 0.0]], np.float32), 1).tolist()
    [1]
    """
    if np.dtype(input.dtype).kind in "iu":  # NOTE: -x overflows at the smallest integer
        return _arg(input, dim, keepdim, select_last_index, "argmin")
    return _arg(neg(input), dim, keepdim, select_last_index, "argmin")
