"""fuse_attention: a transformer's heads become one head_attention node, which computes what
eager nn computes in the interpreter and on every kernel provider; shapes it does not take
stay unfused."""

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import nn
import runtime
from modelc.passes import optimize
from nn import functional as F

BATCH, LENGTH, HEADS, WIDTH = 2, 7, 3, 4


@pytest.fixture(scope="module")
def attention():
    nn.init.manual_seed(0)
    config = nn.models.BertConfig(hidden_size=HEADS * WIDTH, num_attention_heads=HEADS)
    return nn.models.bert.BertSelfAttention(config).eval()


def _inputs():
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((BATCH, LENGTH, HEADS * WIDTH)).astype(np.float32)
    mask = np.zeros((BATCH, 1, 1, LENGTH), np.float32)
    mask[1, ..., 4:] = np.finfo(np.float32).min  # the second sequence padded after 4 tokens
    return hidden, mask


class _Heads(nn.Module):
    """Attention over (B, T, H, D) heads with a given mask, returning the weights too;
    ``guard``: the weights' NaN rows zeroed, as torch exports a masked SDPA."""

    def __init__(self, guard: bool = False) -> None:
        super().__init__()
        self.guard = guard

    def forward(self, q, k, v, mask):  # type: ignore[no-untyped-def]
        scores = F.matmul(F.permute(q, (0, 2, 1, 3)), F.permute(k, (0, 2, 3, 1))) + mask
        weights = F.softmax(scores, -1)  # (B, H, T, T)
        if self.guard:
            weights = F.where(F.ne(weights, weights), 0.0, weights)
        return F.permute(F.matmul(weights, F.permute(v, (0, 2, 1, 3))), (0, 2, 1, 3)), weights


def test_heads_become_one_node_computing_what_eager_nn_computes(attention) -> None:
    hidden, mask = _inputs()
    graph = optimize(modelc.trace(attention, (hidden, mask)))
    ops = [node.op for node in graph.nodes]
    # only K^T's permute is left of the four head permutes
    assert ops.count("head_attention") == 1 and ops.count("permute") == 1
    assert "softmax" not in ops and "matmul" not in ops
    got = modelc.interpret(graph, {"input0": hidden, "input1": mask})["output0"]
    np.testing.assert_allclose(got, attention(hidden, mask), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_fused_heads_run_on_every_provider(attention, kernels) -> None:
    hidden, mask = _inputs()
    wasm = modelc.export(attention, (hidden, mask))
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({"input0": hidden, "input1": mask})["output0"]
    np.testing.assert_allclose(got, attention(hidden, mask), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mask_shape", [(1, 1, LENGTH, LENGTH), (BATCH, 1, LENGTH, LENGTH)])
@pytest.mark.parametrize("kernels", ["interpreter", *PROVIDERS])
def test_a_mask_per_query_row_fuses(mask_shape, kernels) -> None:
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal((BATCH, LENGTH, HEADS, WIDTH)).astype(np.float32)
              for _ in range(3)] + [rng.standard_normal(mask_shape).astype(np.float32)]
    model = Lambda(lambda *a: _Heads()(*a)[0])
    graph = optimize(modelc.trace(model, tuple(inputs)))
    assert [node.op for node in graph.nodes].count("head_attention") == 1
    feed = {f"input{i}": x for i, x in enumerate(inputs)}
    if kernels == "interpreter":
        got = modelc.interpret(graph, feed)["output0"]
    else:
        with runtime.load(modelc.export(model, tuple(inputs)), kernels=kernels) as session:
            got = session.run(feed)["output0"]
    np.testing.assert_allclose(got, model(*inputs), rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the all -inf rows
@pytest.mark.parametrize("kernels", ["interpreter", *PROVIDERS])
def test_a_nan_guard_after_the_softmax_fuses_and_zeroes_fully_masked_rows(kernels) -> None:
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((BATCH, LENGTH, HEADS, WIDTH)).astype(np.float32)
               for _ in range(3))
    mask = np.zeros((BATCH, 1, LENGTH, LENGTH), np.float32)
    mask[1, ..., 4:] = -np.inf
    mask[1, 0, 2] = mask[0, 0, 5] = -np.inf  # two queries that see no key
    model = Lambda(lambda *a: _Heads(guard=True)(*a)[0])
    graph = optimize(modelc.trace(model, (q, k, v, mask)))
    ops = [node.op for node in graph.nodes]
    assert ops.count("head_attention") == 1 and "softmax" not in ops, ops
    feed = {f"input{i}": x for i, x in enumerate((q, k, v, mask))}
    if kernels == "interpreter":
        got = modelc.interpret(graph, feed)["output0"]
    else:
        with runtime.load(modelc.export(model, (q, k, v, mask)), kernels=kernels) as session:
            got = session.run(feed)["output0"]
    assert not np.any(got[1, 2]) and not np.any(got[0, 5]) and not np.any(np.isnan(got))
    np.testing.assert_allclose(got, model(q, k, v, mask), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mask_shape, returns_weights", [
    ((1, HEADS, LENGTH, LENGTH), False),  # a mask per head: not the kernel's
    ((BATCH, 1, 1, LENGTH), True),        # the weights are an output too
])
def test_attention_the_kernel_cannot_take_stays_unfused(mask_shape, returns_weights) -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((BATCH, LENGTH, HEADS, WIDTH)).astype(np.float32)
               for _ in range(3))
    mask = rng.standard_normal(mask_shape).astype(np.float32)
    model = _Heads() if returns_weights else Lambda(lambda *a: _Heads()(*a)[0])
    graph = optimize(modelc.trace(model, (q, k, v, mask)))
    assert "head_attention" not in [node.op for node in graph.nodes]
    got = modelc.interpret(graph, {f"input{i}": x for i, x in enumerate((q, k, v, mask))})
    expected = model(q, k, v, mask)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for out, want in zip(got.values(), expected):
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
