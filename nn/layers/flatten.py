"""``Flatten``: merge a range of axes into one."""

from __future__ import annotations

from typing import Any

from .. import functional as F
from ..module import Module

__all__ = ["Flatten"]


class Flatten(Module):
    """Axes ``start_dim..end_dim`` merged (by default all but the batch axis).

    >>> import numpy as np
    >>> Flatten()(np.ones((2, 3, 4))).shape
    (2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Any) -> Any:
        return F.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
