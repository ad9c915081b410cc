"""A BERT encoder with Hugging Face's module tree and parameter names, so a BERT-family
checkpoint directory (``config.json`` + ``model.safetensors``) loads unchanged.

Built only from ``nn`` layers and ``nn.functional`` ops (the attention mask included), so
``modelc`` can trace and compile it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import functional as F
from ..layers import Dropout, Embedding, LayerNorm, Linear, ModuleList
from ..module import Module
from ..serialization import load_safetensors

__all__ = ["BertConfig", "BertModel"]

_ACTIVATIONS: dict[str, Callable[[Any], Any]] = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


@dataclasses.dataclass
class BertConfig:
    """The ``config.json`` fields a BERT encoder needs; other fields are ignored."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    position_embedding_type: str = "absolute"

    def __post_init__(self) -> None:
        if self.hidden_act not in _ACTIVATIONS:
            raise ValueError(f"unsupported hidden_act {self.hidden_act!r}; available: "
                             f"{sorted(_ACTIVATIONS)}")
        if self.position_embedding_type != "absolute":
            raise ValueError(f"unsupported position_embedding_type "
                             f"{self.position_embedding_type!r}; available: ['absolute']")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not a multiple of "
                             f"num_attention_heads {self.num_attention_heads}")

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> BertConfig:
        """Read a Hugging Face ``config.json``.

        Raises:
            ValueError: an activation or position embedding type this encoder lacks.
        """
        with open(path, encoding="utf-8") as file:
            raw = json.load(file)
        names = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in raw.items() if key in names})


class BertEmbeddings(Module):
    """Word + position + token-type embeddings, then LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.word_embeddings = Embedding(config.vocab_size, config.hidden_size,
                                         padding_idx=config.pad_token_id)
        self.position_embeddings = Embedding(config.max_position_embeddings,
                                             config.hidden_size)
        self.token_type_embeddings = Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: Any, token_type_ids: Any | None = None) -> Any:
        """Embeddings of (B, T) token ids; ``token_type_ids`` None means all type 0.

        Position ``t`` uses row ``t`` of the position table (Hugging Face's default
        ``position_ids = arange(T)``), taken as a slice so ``T`` may be symbolic.
        """
        length = input_ids.shape[1]
        x = self.word_embeddings(input_ids)  # (B, T, H)
        if token_type_ids is None:
            x = x + self.token_type_embeddings.weight[0]
        else:
            x = x + self.token_type_embeddings(token_type_ids)
        x = x + F.slice(self.position_embeddings.weight, 0, 0, length)  # (T, H)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(Module):
    """Multi-head self-attention with separate ``query``/``key``/``value`` projections."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = Linear(config.hidden_size, config.hidden_size)
        self.key = Linear(config.hidden_size, config.hidden_size)
        self.value = Linear(config.hidden_size, config.hidden_size)
        self.dropout = Dropout(config.attention_probs_dropout_prob)

    def _heads(self, x: Any) -> Any:
        batch, length, _ = x.shape
        x = F.reshape(x, (batch, length, self.num_attention_heads,
                          self.attention_head_size))  # (B, T, nh, hs)
        return F.permute(x, (0, 2, 1, 3))  # (B, nh, T, hs)

    def forward(self, hidden: Any, mask: Any) -> Any:
        batch, length, width = hidden.shape
        q, k, v = (self._heads(proj(hidden)) for proj in (self.query, self.key, self.value))
        probs = self.dropout(F.attention_weights(q, k, mask))  # (B, nh, T, T)
        context = F.permute(F.matmul(probs, v), (0, 2, 1, 3))  # (B, T, nh, hs)
        return F.reshape(context, (batch, length, width))  # (B, T, H)


class BertSelfOutput(Module):
    """Projection, dropout, then LayerNorm of the residual sum."""

    def __init__(self, config: BertConfig, in_features: int) -> None:
        super().__init__()
        self.dense = Linear(in_features, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, hidden: Any, residual: Any) -> Any:
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertAttention(Module):
    """``self`` attention followed by its ``output`` block."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config, config.hidden_size)

    def forward(self, hidden: Any, mask: Any) -> Any:
        return self.output(self.self(hidden, mask), hidden)


class BertIntermediate(Module):
    """The feed-forward expansion and its activation."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = _ACTIVATIONS[config.hidden_act]

    def forward(self, hidden: Any) -> Any:
        return self.intermediate_act_fn(self.dense(hidden))


class BertLayer(Module):
    """One post-norm transformer layer, named as Hugging Face names it."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertSelfOutput(config, config.intermediate_size)

    def forward(self, hidden: Any, mask: Any) -> Any:
        attended = self.attention(hidden, mask)
        return self.output(self.intermediate(attended), attended)


class BertEncoder(Module):
    """The stack of layers."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.layer = ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden: Any, mask: Any) -> Any:
        for layer in self.layer:
            hidden = layer(hidden, mask)
        return hidden


class BertPooler(Module):
    """``tanh(dense(h[:, 0]))``: the first token's state, projected."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden: Any) -> Any:
        first = F.squeeze(F.slice(hidden, 1, 0, 1), 1)  # (B, H)
        return F.tanh(self.dense(first))


class BertModel(Module):
    """BERT encoder: ``forward(input_ids, attention_mask=None, token_type_ids=None)`` returns
    ``(last_hidden_state, pooler_output)``, the latter None without a pooler.

    ``attention_mask`` (B, T) holds 1 for tokens to attend to and 0 for padding.

    >>> config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1,
    ...                     num_attention_heads=2, intermediate_size=16)
    >>> hidden, pooled = BertModel(config).eval()(np.array([[2, 7, 3]]))
    >>> hidden.shape, pooled.shape
    ((1, 3, 8), (1, 8))
    """

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike[str]) -> BertModel:
        """Load ``config.json`` and ``model.safetensors`` from a Hugging Face checkpoint
        directory, in eval mode. A ``bert.`` key prefix (task-model checkpoints) is
        stripped, task heads (``cls.``) and the ``position_ids`` buffer are skipped, and
        the pooler is built only if the checkpoint has one.

        Raises:
            FileNotFoundError: ``config.json`` or ``model.safetensors`` is missing.
            RuntimeError: the checkpoint's keys or shapes do not fit this encoder.
        """
        config = BertConfig.from_json(os.path.join(directory, "config.json"))
        raw = load_safetensors(os.path.join(directory, "model.safetensors"))
        state = {key.removeprefix("bert."): value for key, value in raw.items()
                 if not key.startswith("cls.") and not key.endswith("position_ids")}
        model = cls(config, add_pooling_layer="pooler.dense.weight" in state)
        model.load_state_dict(state)
        return model.eval()

    def forward(self, input_ids: Any, attention_mask: Any = None,
                token_type_ids: Any = None) -> tuple[Any, Any]:
        batch, length = input_ids.shape
        hidden = self.embeddings(input_ids, token_type_ids)  # (B, T, H)
        mask = None
        if attention_mask is not None:
            keep = F.reshape(F.cast(attention_mask, hidden.dtype), (batch, 1, 1, length))
            # NOTE: Hugging Face's additive mask: 0 to attend, the dtype's lowest value to skip.
            mask = (1.0 - keep) * float(np.finfo(hidden.dtype).min)  # (B, 1, 1, T)
        hidden = self.encoder(hidden, mask)
        return hidden, (self.pooler(hidden) if self.pooler is not None else None)
