"""The op vocabulary: every layer calls these, and tracing records them.

Primitives (``@primitive``) hold the numpy reference semantics and need a kernel lowering
in ``modelc/ops/<name>.py``. Composite ops are written only in primitives, so they trace
and compile with no further code. Functions take and return ``numpy.ndarray`` in eager mode.
"""

from __future__ import annotations

import numpy as np

from ._dispatch import primitive

__all__ = ["linear", "relu"]


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
def relu(input: np.ndarray) -> np.ndarray:
    """``max(input, 0)`` elementwise; NaN stays NaN.

    >>> relu(np.array([-1.0, 2.0], np.float32)).tolist()
    [0.0, 2.0]
    """
    return np.maximum(input, np.zeros((), dtype=input.dtype))
