import numpy as np
import pytest

import modelc
import nn
from modelc.passes import fuse_epilogues, recognize_composites
from nn import functional as F


class Act(nn.Module):
    def __init__(self, fn, leak=False):
        super().__init__()
        self.fn, self.leak = fn, leak
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        h = self.fc(x)
        y = self.fn(h)
        return (y, h * 0.5) if self.leak else y


def _gelu_as_onnx_exports_it(h):  # torch's exporter: Div, Erf, Add, Mul, Mul
    return h * (F.erf(h / float(np.float32(np.sqrt(2.0)))) + 1.0) * 0.5


def _hardswish_as_paddle_exports_it(h):  # paddle2onnx: Add, Clip, Mul, Div
    return h * F.relu6(h + 3.0) / 6.0


def _hardswish_as_hard_sigmoid_times_x(h):  # ONNX HardSigmoid(1/6, 0.5) * x, imported
    return F.minimum(F.maximum(h * float(np.float32(1 / 6)) + 0.5, 0.0), 1.0) * h


@pytest.mark.parametrize("name, fn", [("gelu", F.gelu), ("gelu", _gelu_as_onnx_exports_it),
                                      ("silu", F.silu), ("relu6", F.relu6),
                                      ("hardswish", F.hardswish),
                                      ("hardswish", _hardswish_as_paddle_exports_it),
                                      ("hardswish", _hardswish_as_hard_sigmoid_times_x)])
def test_composite_becomes_one_node_then_fuses_into_the_gemm(name, fn):
    model = Act(fn).eval()
    graph = recognize_composites(modelc.trace(model, (np.zeros((2, 6), np.float32),)))
    graph.verify()
    assert [n.op for n in graph.nodes] == ["linear", name]
    graph = fuse_epilogues(graph)
    assert [(n.op, n.attrs.get("epilogue")) for n in graph.nodes] == [("linear", (name,))]
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32) * 4
    np.testing.assert_allclose(modelc.interpret(graph, {"input0": x})["output0"], model(x),
                               rtol=1e-6, atol=1e-6)


def test_other_functions_with_the_same_ops_are_left_alone():
    model = Act(lambda h: h * 0.5 * (F.erf(h * 0.7) + 1.0)).eval()  # not gelu's constant
    graph = recognize_composites(modelc.trace(model, (np.zeros((2, 6), np.float32),)))
    assert "gelu" not in [n.op for n in graph.nodes]


def test_expansion_is_kept_when_an_intermediate_has_other_users():
    class Shares(nn.Module):
        def forward(self, x):
            s = F.sigmoid(x)
            return x * s, s  # silu's sigmoid is also an output

    graph = recognize_composites(modelc.trace(Shares(), (np.zeros((2, 3), np.float32),)))
    assert [n.op for n in graph.nodes] == ["sigmoid", "mul"]
