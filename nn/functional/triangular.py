"""Triangular selections and running sums, composites over constant triangular matrices:
``triu``, ``tril`` (a ``where`` on a constant mask, so an inf outside the triangle still
gives 0; over a symbolic axis the mask compares positions at run time), ``cumsum`` (a
``linear`` with a triangular weight, so it runs on the gemm kernel; integers are summed
exactly by doubling instead) and ``cumprod`` (by doubling); the scanned axis must have a
fixed size."""

from __future__ import annotations

from typing import Any

import numpy as np

from .creation import arange, full
from .elementwise import add, ge, le, mul, sub, where
from .linear import linear
from .shape import concat, permute, reshape, slice

__all__ = ["cumprod", "cumsum", "tril", "triu"]


def _fixed(size: Any, what: str) -> int:
    if not isinstance(size, (int, np.integer)):
        raise ValueError(f"{what} needs a fixed size, got the symbolic {size!r}")
    return int(size)


def _mask(input: Any, diagonal: int, upper: bool, op: str) -> Any:
    """Which elements of the last two axes are kept: a constant, or over a symbolic axis a
    run-time comparison of the column and row positions (``arange`` up to each dim)."""
    if len(input.shape) < 2:
        raise ValueError(f"{op}: input tensor must have at least 2 dimensions, got shape "
                         f"{tuple(input.shape)}")
    rows, columns = input.shape[-2:]
    if isinstance(rows, (int, np.integer)) and isinstance(columns, (int, np.integer)):
        lower = np.tri(int(rows), int(columns), diagonal - 1 if upper else diagonal, dtype=bool)
        return ~lower if upper else lower
    offset = sub(reshape(arange(columns), (1, columns)), reshape(arange(rows), (rows, 1)))
    return ge(offset, diagonal) if upper else le(offset, diagonal)


def triu(input: Any, diagonal: int = 0) -> Any:
    """The upper triangle of the last two axes (from ``diagonal`` up), zeros elsewhere.

    Raises:
        ValueError: fewer than 2 axes.

    >>> triu(np.ones((2, 2), np.float32)).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    return where(_mask(input, diagonal, True, "triu"), input, 0.0)


def tril(input: Any, diagonal: int = 0) -> Any:
    """The lower triangle of the last two axes (up to ``diagonal``), zeros elsewhere.

    Raises:
        ValueError: fewer than 2 axes.

    >>> tril(np.ones((2, 2), np.float32)).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    return where(_mask(input, diagonal, False, "tril"), input, 0.0)


def cumsum(input: Any, dim: int, exclusive: bool = False, reverse: bool = False) -> Any:
    """Running sums along ``dim`` (torch's ``cumsum``); ``exclusive`` leaves each element
    out of its own sum and ``reverse`` sums from the end (ONNX CumSum's attributes).

    Raises:
        ValueError: ``dim`` out of range, or the axis is symbolic.

    >>> cumsum(np.array([1.0, 2.0, 3.0], np.float32), 0).tolist()
    [1.0, 3.0, 6.0]
    """
    rank = len(input.shape)
    if not -rank <= dim < rank:
        raise ValueError(f"cumsum: dim {dim} is out of range for rank {rank}")
    dim %= rank
    n = _fixed(input.shape[dim], f"cumsum over axis {dim}")
    if np.dtype(input.dtype).kind in "iu":
        return _integer_cumsum(input, dim, n, exclusive, reverse)
    # weight[j, i]: whether x[i] is in sum j (linear computes x @ weight.T)
    weight = np.tril(np.ones((n, n), np.float32), -1 if exclusive else 0)
    weight = weight.T if reverse else weight
    if dim == rank - 1:
        return linear(input, weight)
    order = [d for d in range(rank) if d != dim] + [dim]
    summed = linear(permute(input, order), weight)
    return permute(summed, [order.index(d) for d in range(rank)])


def _integer_cumsum(input: Any, dim: int, n: int, exclusive: bool, reverse: bool) -> Any:
    """Running sums of integers, exact and wrapping as the integer adds do."""
    values = slice(input, dim, None, None, -1) if reverse else input
    sums = _doubling(values, dim, n, add)
    if exclusive:
        sums = sub(sums, values)
    return slice(sums, dim, None, None, -1) if reverse else sums


def _doubling(values: Any, dim: int, n: int, combine: Any) -> Any:
    """Running ``combine`` (associative) along ``dim`` by doubling (Hillis-Steele): after
    the step of ``shift``, element i combines the ``2 * shift`` elements up to it, so
    log2(n) slice-combine-concat steps do it."""
    scanned, shift = values, 1
    while shift < n:
        scanned = concat([slice(scanned, dim, 0, shift),
                          combine(slice(scanned, dim, shift, n),
                                  slice(scanned, dim, 0, n - shift))], dim)
        shift *= 2
    return scanned


def cumprod(input: Any, dim: int, exclusive: bool = False, reverse: bool = False) -> Any:
    """Running products along ``dim`` (torch's ``cumprod``); ``exclusive`` leaves each
    element out of its own product (the first is 1) and ``reverse`` multiplies from the end
    (ONNX CumProd's attributes). Integers wrap as their multiplies do.

    Raises:
        ValueError: ``dim`` out of range, or the axis is symbolic.

    >>> cumprod(np.array([1.0, 2.0, 3.0, 4.0], np.float32), 0, exclusive=True).tolist()
    [1.0, 1.0, 2.0, 6.0]
    """
    rank = len(input.shape)
    if not -rank <= dim < rank:
        raise ValueError(f"cumprod: dim {dim} is out of range for rank {rank}")
    dim %= rank
    n = _fixed(input.shape[dim], f"cumprod over axis {dim}")
    values = slice(input, dim, None, None, -1) if reverse else input
    if exclusive and n:
        # NOTE: shifted by one behind a 1, not divided: a zero must not poison the rest
        ones = full([1 if d == dim else size for d, size in enumerate(input.shape)], 1,
                    dtype=input.dtype)
        values = concat([ones, slice(values, dim, 0, n - 1)], dim)
    products = _doubling(values, dim, n, mul)
    return slice(products, dim, None, None, -1) if reverse else products
