"""A transformer classifier whose forward is written as plain numpy (ndarray methods,
operators, indexing, np.* calls, no nn.functional): exported with symbolic batch and sequence
axes and run on every kernel provider against the same forward run eagerly."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
import nn
import runtime

D, HEADS, HIDDEN, CLASSES = 16, 2, 32, 3
DYNAMIC = {"tokens": {0: ("batch", 1, 4), 1: ("seq", 1, 12)}}


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


class NumpyClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(0)

        def weight(*shape: int) -> nn.Parameter:
            return nn.Parameter((rng.standard_normal(shape) / np.sqrt(shape[0]))
                                .astype(np.float32))

        self.qkv, self.out = weight(D, 3 * D), weight(D, D)
        self.up, self.down = weight(D, HIDDEN), weight(HIDDEN, D)
        self.head = weight(3 * D, CLASSES)

    def forward(self, tokens: np.ndarray) -> dict[str, np.ndarray]:
        b, s, d = tokens.shape
        q, k, v = np.split(tokens @ self.qkv, 3, axis=-1)
        q, k, v = (t.reshape(b, s, HEADS, d // HEADS).transpose(0, 2, 1, 3) for t in (q, k, v))
        scores = q @ k.swapaxes(-1, -2) / np.sqrt(d // HEADS)  # (b, heads, s, s)
        context = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
        h = layer_norm(tokens + context @ self.out)
        h = layer_norm(h + np.maximum(h @ self.up, 0) @ self.down)
        pooled = np.concatenate([h[:, 0], h.mean(axis=1), h.max(axis=1)], axis=-1)
        logits = pooled @ self.head
        return {"logits": logits, "label": logits.argmax(-1)}


@pytest.fixture(scope="module")
def exported() -> tuple[NumpyClassifier, bytes]:
    model = NumpyClassifier().eval()
    example = np.zeros((2, 5, D), np.float32)
    return model, modelc.export(model, {"tokens": example}, dynamic=DYNAMIC)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_numpy_style_forward_matches_eager(exported: tuple[NumpyClassifier, bytes],
                                           kernels: str) -> None:
    model, wasm = exported
    rng = np.random.default_rng(1)
    with runtime.load(wasm, kernels=kernels) as session:
        for batch, seq in ((1, 1), (3, 7), (2, 12)):
            tokens = rng.standard_normal((batch, seq, D)).astype(np.float32)
            got, ref = session.run({"tokens": tokens}), model(tokens)
            np.testing.assert_allclose(got["logits"], ref["logits"], rtol=1e-4, atol=1e-4)
            np.testing.assert_array_equal(got["label"], ref["label"])
