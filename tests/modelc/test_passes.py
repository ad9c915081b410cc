import numpy as np

import modelc
from modelc.passes import fuse_epilogues, optimize


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
