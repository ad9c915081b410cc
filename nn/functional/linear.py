"""Matrix products: ``linear`` and ``matmul`` (numpy/torch batched broadcasting rules)."""

from __future__ import annotations

import numpy as np

from .._dispatch import primitive

__all__ = ["linear", "matmul"]


@primitive
def linear(input: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """``input @ weight.T + bias``, as ``torch.nn.functional.linear``; weight is (out, in).

    >>> linear(np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)).shape
    (2, 4)
    """
    out = np.matmul(input, weight.T)
    if bias is not None:
        out = out + bias
    return out


@primitive
def matmul(input: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Matrix product with batch broadcasting, as ``torch.matmul`` (also ``bmm``).

    >>> matmul(np.ones((5, 2, 3), np.float32), np.ones((3, 4), np.float32)).shape
    (5, 2, 4)
    """
    return np.matmul(input, other)
