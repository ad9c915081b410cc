"""``Dropout``: identity in eval mode."""

from __future__ import annotations

from typing import Any

from .. import functional as F
from ..module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Zero elements with probability ``p`` while training; identity in eval mode.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``.

    >>> import numpy as np
    >>> x = np.ones(4, np.float32)
    >>> Dropout(0.5).eval()(x) is x
    True
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Any) -> Any:
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
