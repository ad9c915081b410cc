"""``fuse_epilogues`` across a reshape: ``f(reshape(conv(x)))`` becomes
``reshape(conv[f](x))`` (a 1-D conv exported as a 2-D one between reshapes), only when the
reshape's output feeds nothing else; the numbers on every kernel provider against eager nn
and torch."""

from __future__ import annotations

import numpy as np
import pytest

import modelc
import nn
import runtime
from nn import functional as F

PROVIDERS = ["relaxed", "simd128", "scalar", "host"]


class Flattened(nn.Module):
    """A conv whose reshaped output goes through sigmoid (fusable), and one whose reshaped
    output is also read raw (not fusable: the reshape's output has two users)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(6, 8, (3, 1))
        self.b = nn.Conv2d(6, 4, 1)

    def forward(self, x):  # type: ignore[no-untyped-def]
        a = F.sigmoid(F.reshape(self.a(x), (1, 8, 7)))
        flat = F.reshape(self.b(x), (1, 4, 9))
        return F.amax(a, -1), F.silu(flat) + flat


def _x() -> np.ndarray:
    return np.random.default_rng(7).standard_normal((1, 6, 9, 1)).astype(np.float32) * 2


def _model() -> Flattened:
    model = Flattened()
    rng = np.random.default_rng(8)
    for _, param in model.named_parameters():
        param[...] = rng.standard_normal(param.shape).astype(np.float32) * 0.5
    return model.eval()


def test_an_activation_fuses_through_a_reshape_that_only_it_reads() -> None:
    graph = modelc.optimize(modelc.trace(_model(), (_x(),)))
    convs = [node.attrs.get("epilogue", ()) for node in graph.nodes if node.op == "conv2d"]
    assert convs == [("sigmoid",), ()]
    assert [node.op for node in graph.nodes].count("silu") == 1


@pytest.fixture(scope="module")
def compiled() -> bytes:
    return modelc.export(_model(), (_x(),))


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_fused_through_a_reshape_matches_eager_and_torch(compiled: bytes, kernels: str) -> None:
    torch = pytest.importorskip("torch")
    model, x = _model(), _x()
    with runtime.load(compiled, kernels=kernels) as session:
        got = list(session.run({"input0": x}).values())
    for g, w in zip(got, model(x), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    t, fn = torch.from_numpy, torch.nn.functional
    a = fn.conv2d(t(x), t(model.a.weight), t(model.a.bias)).reshape(1, 8, 7)
    want = torch.sigmoid(a).amax(-1)
    np.testing.assert_allclose(got[0], want.numpy(), rtol=1e-5, atol=1e-5)
