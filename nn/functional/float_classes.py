"""Floating-point classes as bool tensors: ``isnan`` and ``isinf`` (composites of the
comparisons)."""

from __future__ import annotations

import numpy as np

from .elementwise import abs, eq, ne

__all__ = ["isinf", "isnan"]


def isnan(input: np.ndarray) -> np.ndarray:
    """True where ``input`` is NaN (the one value not equal to itself).

    >>> isnan(np.array([1.0, np.nan], np.float32)).tolist()
    [False, True]
    """
    return ne(input, input)


def isinf(input: np.ndarray) -> np.ndarray:
    """True where ``input`` is +inf or -inf.

    >>> isinf(np.array([np.inf, -np.inf, 1.0, np.nan], np.float32)).tolist()
    [True, True, False, False]
    """
    return eq(abs(input), np.inf)
