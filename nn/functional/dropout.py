"""``dropout``: identity at inference, a scaled random mask in training."""

from __future__ import annotations

import numpy as np

from .. import init

__all__ = ["dropout"]


def dropout(input: np.ndarray, p: float = 0.5, training: bool = True) -> np.ndarray:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` when
    ``training``; otherwise return ``input`` unchanged (what a compiled model does).

    Raises:
        ValueError: ``p`` outside ``[0, 1]``.

    >>> x = np.ones(3, np.float32)
    >>> dropout(x, 0.5, training=False) is x
    True
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    keep = init.generator().random(tuple(input.shape)) >= p
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return input * (keep * scale).astype(input.dtype)
