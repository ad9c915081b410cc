import numpy as np
import pytest

import modelc
import nn
from modelc.passes import eliminate_dead_code, fuse_epilogues, infer_shapes, optimize, remove_no_ops
from nn import functional as F


def _graph(mlp, batch=4):
    return modelc.trace(mlp, (np.zeros((batch, 12), np.float32),),
                        dynamic={"input0": {0: ("batch", 1, 32)}})


def test_relu_fuses_into_the_linear_that_feeds_it(mlp):
    graph = fuse_epilogues(_graph(mlp))
    graph.verify()
    assert [(n.op, n.attrs.get("epilogue", ())) for n in graph.nodes] == [
        ("linear", ("relu",)), ("linear", ())]


def test_optimized_graph_computes_what_numpy_computes(mlp):
    graph = optimize(_graph(mlp))
    x = np.random.default_rng(1).standard_normal((7, 12)).astype(np.float32)
    w1, b1, w2, b2 = (np.asarray(p) for p in mlp.parameters())
    expected = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    got = modelc.interpret(graph, {"input0": x})["output0"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_arena_shares_memory_only_between_values_not_alive_together(mlp):
    model = mlp
    graph = optimize(_graph(model))
    arena = graph.meta["arena"]
    values = graph.values()
    lifetimes = {}
    for value in values:
        start = -1 if value.producer is None else graph.nodes.index(value.producer)
        uses = [graph.nodes.index(u) for u in value.users]
        end = len(graph.nodes) if value in graph.outputs.values() else max(uses, default=start)
        nbytes = graph.max_numel(value) * 4
        lifetimes[id(value)] = (start, end, arena[id(value)], arena[id(value)] + nbytes)
    items = list(lifetimes.values())
    for i, (s1, e1, lo1, hi1) in enumerate(items):
        for s2, e2, lo2, hi2 in items[i + 1:]:
            if not (e1 < s2 or e2 < s1):
                assert hi1 <= lo2 or hi2 <= lo1
    assert graph.meta["arena_bytes"] <= graph.meta["activation_bytes"]
    assert all(offset % 16 == 0 for offset in arena.values())



class _Masks(nn.Module):
    """Mask-building steps an ONNX export produces, around ones that must stay."""

    def forward(self, ids, x):  # type: ignore[no-untyped-def]
        mask = F.cast(F.cast(ids, np.bool_), np.bool_)                          # (2, 5) bool
        rows = F.concat([F.slice(mask, 1, i, i + 1, 1) for i in range(5)], 1)  # all of it
        x = F.reshape(F.slice(x, 0, 0, 2, 1), (2, -1))                          # all of x
        part = F.concat([F.slice(x, 1, 0, 2, 1), F.slice(x, 1, 3, 5, 1)], 1)   # a gap: kept
        wide = F.add(rows, np.zeros((2, 5), np.bool_))                          # no broadcast
        return F.where(wide, F.sum(part, 1, keepdim=True), x)


def test_remove_no_ops_drops_identities_and_keeps_the_rest():
    ids = np.array([[0, 3, 0, -1, 2], [1, 0, 0, 5, 0]], np.int64)
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    graph = modelc.trace(_Masks(), (ids, x))
    for run in (infer_shapes, remove_no_ops, eliminate_dead_code):
        graph = run(graph)
        graph.verify()
    ops = [n.op for n in graph.nodes]
    assert ops.count("cast") == 1 and "add" not in ops and "reshape" not in ops
    assert ops.count("concat") == 1 and ops.count("slice") == 2  # only the gapped one remains
    got = modelc.interpret(graph, {"input0": ids, "input1": x})["output0"]
    np.testing.assert_array_equal(got, _Masks()(ids, x))



class _GuardedSoftmax(nn.Module):
    """Softmaxes of scores with torch's NaN guard: a finite constant mask (the guard goes),
    a run-time mask and a constant one with a row of only -inf (both stay)."""

    def forward(self, q, k, mask):  # type: ignore[no-untyped-def]
        blocked = np.zeros((1, 3, 4), np.float32)
        blocked[0, 1] = -np.inf
        outs = []
        for m in (np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), mask, blocked):
            s = F.softmax(F.add(F.matmul(q, k), m), -1)
            outs.append(F.where(F.ne(s, s), 0.0, s))
        return tuple(outs)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the all -inf rows
def test_remove_no_ops_drops_the_nan_guard_only_where_no_row_can_be_all_masked():
    rng = np.random.default_rng(2)
    q, k = rng.standard_normal((2, 3, 5), np.float32), rng.standard_normal((2, 5, 4), np.float32)
    mask = np.zeros((2, 3, 4), np.float32)
    mask[1, 2] = -np.inf
    model = _GuardedSoftmax()
    graph = modelc.trace(model, (q, k, mask))
    for run in (infer_shapes, remove_no_ops, eliminate_dead_code):
        graph = run(graph)
        graph.verify()
    assert [n.op for n in graph.nodes].count("where") == 2
    got = modelc.interpret(graph, {"input0": q, "input1": k, "input2": mask})
    for name, want in zip(graph.outputs, model(q, k, mask), strict=True):
        np.testing.assert_array_equal(got[name], want)
    assert not np.any(np.isnan(got["output1"])) and not np.any(got["output1"][1, 2])


class _Scores(nn.Module):
    """Attention scores: heads split off a projection, then ``q @ k^T * scale``."""

    def __init__(self) -> None:
        super().__init__()
        self.query = nn.Linear(8, 8)
        self.shared = nn.Linear(8, 8)

    def forward(self, x, k, w):  # type: ignore[no-untyped-def]
        q = F.permute(F.reshape(self.query(x), (3, 2, 4)), (1, 0, 2))  # (heads, T, hs)
        shared = self.shared(x)  # also an output: its scale must stay a multiply
        return F.mul(F.matmul(q, k), 0.5), F.mul(F.matmul(shared, w), 0.25), shared


def test_fold_scales_moves_the_factor_into_the_linear_weights():
    rng = np.random.default_rng(1)
    x, k, w = (rng.standard_normal(s).astype(np.float32) for s in ((3, 8), (2, 4, 3), (8, 5)))
    model = _Scores()
    before = np.array(model.query.weight)
    graph = optimize(modelc.trace(model, (x, k, w)))
    muls = [n for n in graph.nodes if n.op == "mul"]
    assert len(muls) == 1 and muls[0].attrs == {"other": 0.25}
    got = modelc.interpret(graph, {"input0": x, "input1": k, "input2": w})
    for index, want in enumerate(model(x, k, w)):
        np.testing.assert_allclose(got[f"output{index}"], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(model.query.weight, before)  # the module keeps its own


class _OnnxLinear(nn.Module):
    """A linear as ONNX exports it: a bias-less matmul, then the bias added, then a residual."""

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(3)
        self.w = rng.standard_normal((6, 5)).astype(np.float32)
        self.b = rng.standard_normal(6).astype(np.float32)

    def forward(self, x):  # type: ignore[no-untyped-def]
        projected = F.relu(F.add(F.linear(x, self.w), self.b.reshape(1, 6)))
        unbiased = F.linear(x, self.w)  # also an output: the add after it must stay
        return projected, unbiased, F.add(unbiased, self.b)


def test_fold_linear_bias_makes_one_linear_with_its_epilogue():
    x = np.random.default_rng(4).standard_normal((3, 4, 5)).astype(np.float32)
    model = _OnnxLinear()
    graph = optimize(modelc.trace(model, (x,)))
    assert [(n.op, len(n.inputs), n.attrs.get("epilogue")) for n in graph.nodes] == [
        ("linear", 3, ("relu",)), ("linear", 2, None), ("add", 2, None)]
    got = modelc.interpret(graph, {"input0": x})
    for index, want in enumerate(model(x)):
        np.testing.assert_allclose(got[f"output{index}"], want, rtol=1e-5, atol=1e-6)
