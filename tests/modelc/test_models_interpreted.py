"""The #5 model set through trace -> every pass -> the numpy interpreter, against eager nn
at two values of each symbolic dim (neither of them the traced one)."""

import numpy as np
import pytest
from models import MODEL_CASES, BasicBlock, randomize

import modelc


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_optimized_graph_matches_eager(case):
    build, example_shape, dynamic, run_shapes = MODEL_CASES[case]
    model = build()
    rng = np.random.default_rng(1)
    graph = modelc.optimize(modelc.trace(model, (np.zeros(example_shape, np.float32),),
                                         dynamic={"input0": dynamic}))
    for shape in run_shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        got = modelc.interpret(graph, {"input0": x})["output0"]
        ref = model(x)
        assert got.shape == ref.shape
        assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max()


def test_batchnorms_fold_into_their_convolutions():
    graph = modelc.optimize(modelc.trace(randomize(BasicBlock()),
                                         (np.zeros((1, 4, 8, 8), np.float32),)))
    ops = [n.op for n in graph.nodes]
    assert "batch_norm" not in ops
    assert ops.count("conv2d") == 3
    conv1 = graph.nodes[0]
    assert conv1.attrs.get("epilogue") == ("relu",)
