"""``Embedding``: a lookup table of ``num_embeddings`` vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import functional as F
from .. import init
from ..module import Module, Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by integer indices.

    ``padding_idx``'s row starts at zero (it only matters for training otherwise).

    Raises:
        ValueError: ``padding_idx`` outside ``[-num_embeddings, num_embeddings)``, or a
            ``_weight`` of the wrong shape.

    >>> Embedding(10, 3)(np.array([[1, 2]])).shape
    (1, 2, 3)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 _weight: np.ndarray | None = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Padding_idx {padding_idx} must be within num_embeddings "
                                 f"{num_embeddings}")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim),
                                             dtype or np.float32))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Shape of weight {tuple(_weight.shape)} does not match "
                                 f"num_embeddings and embedding_dim "
                                 f"{(num_embeddings, embedding_dim)}")
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        """torch's default: N(0, 1), with the padding row zeroed."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings: np.ndarray, freeze: bool = True,
                        padding_idx: int | None = None) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (2-D); ``freeze`` is accepted for
        compatibility (nn never trains).

        Raises:
            ValueError: ``embeddings`` is not 2-D.
        """
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, dim = embeddings.shape
        return cls(rows, dim, padding_idx=padding_idx, _weight=np.asarray(embeddings))

    def forward(self, input: Any) -> Any:
        return F.embedding(input, self.weight)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
