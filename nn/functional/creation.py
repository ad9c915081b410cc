"""Tensors made from a shape alone: ``full``, ``arange``."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._dispatch import primitive
from .shape import slice

__all__ = ["arange", "full"]


@primitive
def full(size: Sequence[int], fill_value: float, dtype: Any = np.float32) -> np.ndarray:
    """An array of shape ``size`` holding ``fill_value``, as ``torch.full``. Traced with a
    symbolic dim in ``size`` (a dim name from a traced tensor's shape), it is computed at
    run time (e.g. the zero initial state of a recurrent layer over a symbolic batch).

    >>> full((2, 3), 0.5).tolist()
    [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]
    """
    return np.full(tuple(size), fill_value, dtype=dtype)


def arange(end: Any, dtype: Any = np.int64) -> Any:
    """``0, 1, ..., end - 1``, as ``torch.arange(end)``. ``end`` may be a symbolic dim (a
    traced tensor's ``shape[i]``, which knows its declared ``bounds``): then the result is
    the first ``end`` elements of a constant ``arange`` over the dim's maximum, taken at run
    time (the positions along a symbolic sequence).

    >>> arange(3).tolist()
    [0, 1, 2]
    """
    if isinstance(end, (int, np.integer)):
        return np.arange(int(end), dtype=dtype)
    return slice(_table(end.bounds[1], np.dtype(dtype)), 0, 0, end)


@functools.cache
def _table(length: int, dtype: np.dtype) -> np.ndarray:
    """One read-only ``arange`` per length and dtype, so a tracer sees one constant and
    equal slices of it (each layer's causal mask) can merge."""
    table = np.arange(length, dtype=dtype)
    table.setflags(write=False)
    return table
