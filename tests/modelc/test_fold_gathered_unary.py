"""``fold_gathered_unary``: an elementwise unary op on rows gathered from a constant table
runs on the table at compile time (Magika's embedding then gelu_tanh), unless the gathered
rows are read elsewhere too; the numbers on every kernel provider against eager nn and
torch."""

from __future__ import annotations

import numpy as np
import pytest

import modelc
import nn
import runtime
from nn import functional as F

PROVIDERS = ["relaxed", "simd128", "scalar", "host"]


class Tables(nn.Module):
    """gelu_tanh and exp of gathered rows (folded), and tanh of rows also read raw (kept)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Embedding(11, 6)
        self.b = nn.Embedding(11, 4)
        self.c = nn.Embedding(11, 3)

    def forward(self, i):  # type: ignore[no-untyped-def]
        b = self.b(i)
        raw = self.c(i)
        return (F.gelu(self.a(i), approximate="tanh") * 2.0, F.exp(b) + b.shape[-1],
                F.tanh(raw) + raw)


def _i() -> np.ndarray:
    return np.random.default_rng(9).integers(0, 11, (2, 5)).astype(np.int64)


def _model() -> Tables:
    model = Tables()
    rng = np.random.default_rng(10)
    for _, param in model.named_parameters():
        param[...] = rng.standard_normal(param.shape).astype(np.float32) * 2
    return model.eval()


def test_unary_ops_on_gathered_rows_fold_into_the_table() -> None:
    graph = modelc.optimize(modelc.trace(_model(), (_i(),)))
    ops = [node.op for node in graph.nodes]
    assert "gelu_tanh" not in ops and "exp" not in ops
    assert ops.count("tanh") == 1 and ops.count("embedding") == 3


@pytest.fixture(scope="module")
def compiled() -> bytes:
    return modelc.export(_model(), (_i(),))


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_folded_tables_match_eager_and_torch(compiled: bytes, kernels: str) -> None:
    torch = pytest.importorskip("torch")
    model, i = _model(), _i()
    with runtime.load(compiled, kernels=kernels) as session:
        got = list(session.run({"input0": i}).values())
    for g, w in zip(got, model(i), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    t, fn = torch.from_numpy, torch.nn.functional
    want = fn.gelu(fn.embedding(t(i), t(np.asarray(model.a.weight))), approximate="tanh") * 2
    np.testing.assert_allclose(got[0], want.numpy(), rtol=1e-5, atol=1e-5)
