"""Tensors made from a shape alone: ``full``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._dispatch import primitive

__all__ = ["full"]


@primitive
def full(size: Sequence[int], fill_value: float, dtype: Any = np.float32) -> np.ndarray:
    """An array of shape ``size`` holding ``fill_value``, as ``torch.full``. Traced with a
    symbolic dim in ``size`` (a dim name from a traced tensor's shape), it is computed at
    run time (e.g. the zero initial state of a recurrent layer over a symbolic batch).

    >>> full((2, 3), 0.5).tolist()
    [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]
    """
    return np.full(tuple(size), fill_value, dtype=dtype)
