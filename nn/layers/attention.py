"""``MultiheadAttention`` with torch's parameters (packed ``in_proj_weight`` or separate
``q/k/v_proj_weight``), layouts (``batch_first``) and masks."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import functional as F
from .. import init
from ..module import Module, Parameter
from .linear import NonDynamicallyQuantizableLinear

__all__ = ["MultiheadAttention"]


def _additive(mask: Any, dtype: Any) -> Any:
    """A bool mask (True = masked out, torch's MHA rule) as 0 / -inf; float masks as is."""
    if mask.dtype == np.bool_:
        return F.cast(F.where(mask, -math.inf, 0.0), dtype)
    return mask


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of ``embed_dim // num_heads`` features each.

    Inputs are (L, N, E), or (N, L, E) with ``batch_first``, or unbatched (L, E).
    ``forward`` returns ``(output, weights)``; weights (N, L, S) averaged over heads, or
    (N, num_heads, L, S), or None without ``need_weights``.

    Raises:
        ValueError: ``embed_dim`` not divisible by ``num_heads``; ``add_bias_kv`` or
            ``add_zero_attn``, which nn does not implement.

    >>> mha = MultiheadAttention(8, 2, batch_first=True)
    >>> x = np.ones((1, 3, 8), np.float32)
    >>> [a.shape for a in mha(x, x, x)]
    [(1, 3, 8), (1, 3, 3)]
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError("embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise ValueError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn:
            raise ValueError("MultiheadAttention(add_bias_kv=True or add_zero_attn=True) is "
                             "not supported by nn")
        dtype = dtype or np.float32
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(np.empty((3 * embed_dim, embed_dim), dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(np.empty((embed_dim, embed_dim), dtype))
            self.k_proj_weight = Parameter(np.empty((embed_dim, self.kdim), dtype))
            self.v_proj_weight = Parameter(np.empty((embed_dim, self.vdim), dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(np.zeros(3 * embed_dim, dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        for weight in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight,
                       self.v_proj_weight):
            if weight is not None:
                init.xavier_uniform_(weight)
        if self.out_proj.bias is not None:
            init.zeros_(self.out_proj.bias)

    def _projections(self) -> tuple[list[Any], list[Any]]:
        weights = (list(F.split(self.in_proj_weight, self.embed_dim))
                   if self._qkv_same_embed_dim
                   else [self.q_proj_weight, self.k_proj_weight, self.v_proj_weight])
        biases = (list(F.split(self.in_proj_bias, self.embed_dim))
                  if self.in_proj_bias is not None else [None, None, None])
        return weights, biases

    def _heads(self, x: Any) -> Any:
        n, length, _ = x.shape
        x = F.reshape(x, (n, length, self.num_heads, self.head_dim))  # (N, L, nh, hd)
        return F.permute(x, (0, 2, 1, 3))  # (N, nh, L, hd)

    def _mask(self, attn_mask: Any, key_padding_mask: Any, n: int, length: int, source: int,
              dtype: Any) -> Any:
        """Both masks as one additive mask broadcastable to (N, nh, L, S)."""
        mask = None
        if attn_mask is not None:
            expected = ((length, source) if attn_mask.ndim == 2
                        else (n * self.num_heads, length, source))
            if tuple(attn_mask.shape) != expected:
                raise ValueError(f"The shape of the {attn_mask.ndim}D attn_mask is "
                                 f"{tuple(attn_mask.shape)}, but should be {expected}.")
            mask = _additive(attn_mask, dtype)
            if attn_mask.ndim == 3:
                mask = F.reshape(mask, (n, self.num_heads, length, source))
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (n, source):
                raise ValueError(f"expected key_padding_mask of shape {(n, source)}, got "
                                 f"{tuple(key_padding_mask.shape)}")
            padding = F.reshape(_additive(key_padding_mask, dtype), (n, 1, 1, source))
            mask = padding if mask is None else mask + padding
        return mask

    def forward(self, query: Any, key: Any, value: Any, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None,
                average_attn_weights: bool = True, is_causal: bool = False) -> tuple[Any, Any]:
        """Attend from ``query`` to ``key``/``value``; ``is_causal`` is a hint that
        ``attn_mask`` is causal, as in torch.

        Raises:
            ValueError: ``is_causal`` without ``attn_mask``, or masks of the wrong shape.
        """
        if is_causal and attn_mask is None:
            raise ValueError("Need attn_mask if specifying the is_causal hint.")
        batched = query.ndim == 3
        if not batched:
            query, key, value = (F.unsqueeze(x, 0) for x in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = F.unsqueeze(key_padding_mask, 0)
        elif not self.batch_first:
            query, key, value = (F.transpose(x, 0, 1) for x in (query, key, value))
        n, length, _ = query.shape  # (N, L, E)
        source = key.shape[1]
        weights, biases = self._projections()
        q, k, v = (self._heads(F.linear(x, w, b))
                   for x, w, b in zip((query, key, value), weights, biases))
        mask = self._mask(attn_mask, key_padding_mask, n, length, source, query.dtype)
        attn = F.dropout(F.attention_weights(q, k, mask), self.dropout, self.training)
        out = F.permute(F.matmul(attn, v), (0, 2, 1, 3))  # (N, L, nh, hd)
        out = self.out_proj(F.reshape(out, (n, length, self.embed_dim)))  # (N, L, E)
        if not batched:
            out = F.squeeze(out, 0)
        elif not self.batch_first:
            out = F.transpose(out, 0, 1)  # (L, N, E)
        if not need_weights:
            return out, None
        if average_attn_weights:
            attn = F.mean(attn, dim=1)  # (N, L, S)
        return out, (attn if batched else F.squeeze(attn, 0))
