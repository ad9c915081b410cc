"""Scaled dot-product attention, as a composite of matmul, softmax and masking."""

from __future__ import annotations

import math

import numpy as np

from .dropout import dropout
from .elementwise import where
from .linear import matmul
from .reduction import softmax
from .shape import permute, transpose

__all__ = ["attention_weights", "head_attention", "scaled_dot_product_attention"]


def attention_weights(query: np.ndarray, key: np.ndarray, attn_mask: np.ndarray | None = None,
                      is_causal: bool = False, scale: float | None = None) -> np.ndarray:
    """``softmax(query @ key^T * scale + mask)`` over the key axis: (..., L, S).

    A bool ``attn_mask`` marks with True the pairs that take part (torch's sdpa rule); a
    float one is added to the scores. ``is_causal`` lets position i see keys 0..i only.

    >>> attention_weights(np.ones((1, 2, 4), np.float32), np.ones((1, 2, 4), np.float32),
    ...                   is_causal=True).tolist()
    [[[1.0, 0.0], [0.5, 0.5]]]
    """
    length, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = matmul(query, transpose(key, -2, -1)) * factor  # (..., L, S)
    if is_causal:
        scores = where(np.tril(np.ones((length, source), dtype=bool)), scores, -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype == np.bool_:
            scores = where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
    return softmax(scores, -1)


def scaled_dot_product_attention(query: np.ndarray, key: np.ndarray, value: np.ndarray,
                                 attn_mask: np.ndarray | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False,
                                 scale: float | None = None) -> np.ndarray:
    """``attention_weights(query, key, ...) @ value``, as torch's function of that name
    (dropout on the weights applies whenever ``dropout_p > 0``, as in torch).

    >>> q = np.ones((1, 3, 4), np.float32)
    >>> scaled_dot_product_attention(q, q, q).shape
    (1, 3, 4)
    """
    weights = attention_weights(query, key, attn_mask, is_causal, scale)
    return matmul(dropout(weights, dropout_p, training=dropout_p > 0.0), value)


def head_attention(query: np.ndarray, key_t: np.ndarray, value: np.ndarray,
                   mask: np.ndarray | None = None) -> np.ndarray:
    """Attention per head with the heads left in the projections' layout:
    ``softmax(q @ key_t + mask) @ v`` for each head, where query is (B, T, H, D), key_t
    (B, H, D, S), value (B, S, H, D) and mask (added to the (B, H, T, S) scores) broadcasts;
    the result is (B, T, H, D), each head's rows where the query's were. (The scale is in
    the query already.) ``modelc.passes.fuse_attention`` writes a transformer's heads so.

    >>> q, kt, v = (np.ones(s, np.float32) for s in ((1, 3, 2, 4), (1, 2, 4, 5), (1, 5, 2, 4)))
    >>> head_attention(q, kt, v).shape
    (1, 3, 2, 4)
    """
    scores = matmul(permute(query, (0, 2, 1, 3)), key_t)  # (B, H, T, S)
    if mask is not None:
        scores = scores + mask
    return permute(matmul(softmax(scores, -1), permute(value, (0, 2, 1, 3))), (0, 2, 1, 3))
