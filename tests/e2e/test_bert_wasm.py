"""A BERT encoder (nn.models.BertModel) compiled with symbolic batch and sequence length,
against eager nn, with padded attention masks, on every kernel provider."""

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
import nn
import runtime

DYNAMIC = {"input_ids": {0: ("batch", 1, 4), 1: ("seq", 1, 16)},
           "attention_mask": {0: ("batch", 1, 4), 1: ("seq", 1, 16)}}


class Encoder(nn.Module):
    def __init__(self, bert: nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        return self.bert(input_ids, attention_mask)[0]


@pytest.fixture(scope="module")
def compiled():
    nn.init.manual_seed(0)
    config = nn.models.BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=32)
    model = Encoder(nn.models.BertModel(config)).eval()
    example = {"input_ids": np.array([[2, 7, 3]]), "attention_mask": np.ones((1, 3), np.int64)}
    return model, modelc.export(model, example, dynamic=DYNAMIC)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_bert_matches_eager_at_two_batch_and_sequence_sizes(compiled, kernels):
    model, wasm = compiled
    rng = np.random.default_rng(5)
    with runtime.load(wasm, kernels=kernels) as session:
        for batch, length in [(1, 2), (3, 16)]:
            ids = rng.integers(0, 60, (batch, length))
            mask = np.ones((batch, length), np.int64)
            mask[-1, length // 2:] = 0
            got = session.run({"input_ids": ids, "attention_mask": mask})["output0"]
            ref = model(ids, mask)
            assert got.shape == ref.shape == (batch, length, 16)
            assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max()


def test_out_of_vocabulary_token_traps_cleanly(compiled):
    _, wasm = compiled
    session = runtime.load(wasm)
    with pytest.raises(runtime.Trap):
        session.run({"input_ids": np.array([[1, 999]]),
                     "attention_mask": np.ones((1, 2), np.int64)})
    ok = session.run({"input_ids": np.array([[1, 2]]),
                      "attention_mask": np.ones((1, 2), np.int64)})
    assert ok["output0"].shape == (1, 2, 16)
