"""unstack_heads: Q, K and V cut from one stacked (3, B, H, T, D) permute (ViT's and Whisper's
layout) become a head permute each, so the attention fuses into one head_attention node that
computes what eager nn computes in the interpreter and on every kernel provider; a stacked
permute read by anything but the cuts stays."""

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
import nn
import runtime
from modelc.passes import optimize
from nn import functional as F

BATCH, LENGTH, HEADS, WIDTH = 2, 7, 3, 4


class _Stacked(nn.Module):
    """Attention over Q, K, V sliced from ``qkv.reshape(B, T, 3, H, D).permute(2, 0, 3, 1, 4)``;
    with ``keep`` the stacked tensor is an output too."""

    def __init__(self, keep: bool = False) -> None:
        super().__init__()
        self.keep = keep

    def forward(self, qkv):  # type: ignore[no-untyped-def]
        stacked = F.permute(F.reshape(qkv, (BATCH, LENGTH, 3, HEADS, WIDTH)), (2, 0, 3, 1, 4))
        q, k, v = (F.reshape(F.slice(stacked, 0, i, i + 1), (BATCH, HEADS, LENGTH, WIDTH))
                   for i in range(3))
        weights = F.softmax(F.matmul(q, F.permute(k, (0, 1, 3, 2))), -1)
        y = F.permute(F.matmul(weights, v), (0, 2, 1, 3))
        return (y, stacked) if self.keep else y


def _qkv() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.standard_normal((BATCH, LENGTH, 3 * HEADS * WIDTH)).astype(np.float32)


def test_stacked_heads_fuse_and_compute_what_eager_nn_computes() -> None:
    qkv = _qkv()
    graph = optimize(modelc.trace(_Stacked(), (qkv,)))
    ops = [node.op for node in graph.nodes]
    assert ops.count("head_attention") == 1 and "softmax" not in ops, ops
    assert all(len(n.output.shape) < 5 for n in graph.nodes if n.op == "permute"), ops
    got = modelc.interpret(graph, {"input0": qkv})["output0"]
    np.testing.assert_allclose(got, _Stacked()(qkv), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_unstacked_heads_run_on_every_provider(kernels) -> None:
    qkv = _qkv()
    with runtime.load(modelc.export(_Stacked(), (qkv,)), kernels=kernels) as session:
        got = session.run({"input0": qkv})["output0"]
    np.testing.assert_allclose(got, _Stacked()(qkv), rtol=1e-5, atol=1e-5)


def test_a_stacked_permute_read_elsewhere_stays() -> None:
    qkv = _qkv()
    graph = optimize(modelc.trace(_Stacked(keep=True), (qkv,)))
    ops = [node.op for node in graph.nodes]
    assert "head_attention" not in ops and "softmax" in ops, ops
    got = modelc.interpret(graph, {"input0": qkv})
    want = _Stacked(keep=True)(qkv)
    for name, expected in zip(("output0", "output1"), want, strict=True):
        np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6)
