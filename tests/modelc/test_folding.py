import numpy as np

import modelc
import nn
from modelc.passes import fold_batchnorm, fold_constants, infer_shapes
from nn import functional as F


class ScaledByParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.arange(4, dtype=np.float32))

    def forward(self, x):
        return x * F.exp(self.w * 0.5)  # exp(w * 0.5) needs no input: folded


def test_constant_subgraphs_are_computed_at_compile_time():
    model = ScaledByParameter()
    graph = fold_constants(modelc.trace(model, (np.zeros((2, 4), np.float32),)))
    graph.verify()
    assert [n.op for n in graph.nodes] == ["mul"]
    folded = next(v for v in graph.nodes[0].inputs if v.is_constant)
    np.testing.assert_allclose(folded.data, np.exp(np.arange(4) * 0.5), rtol=1e-6)
    x = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(modelc.interpret(graph, {"input0": x})["output0"], model(x),
                               rtol=1e-6)


def test_linear_batchnorm_folds_and_keeps_the_numbers():
    model = nn.Sequential(nn.Linear(5, 3), nn.BatchNorm1d(3)).eval()
    rng = np.random.default_rng(0)
    model[1].running_mean[...] = rng.standard_normal(3)
    model[1].running_var[...] = rng.uniform(0.5, 2, 3)
    model[1].weight[...] = rng.standard_normal(3)
    graph = fold_batchnorm(infer_shapes(modelc.trace(model, (np.zeros((2, 5), np.float32),))))
    graph.verify()
    assert [n.op for n in graph.nodes] == ["linear"]
    x = rng.standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(modelc.interpret(graph, {"input0": x})["output0"], model(x),
                               rtol=1e-5, atol=1e-6)


def test_batchnorm_with_two_users_of_its_input_is_kept():
    class Both(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 2, 1)
            self.bn = nn.BatchNorm2d(2)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y

    graph = fold_batchnorm(modelc.trace(Both().eval(), (np.zeros((1, 2, 3, 3), np.float32),)))
    assert "batch_norm" in [n.op for n in graph.nodes]
