"""fold_dequantize_scales on the graph onnxruntime's quantize_dynamic makes of a linear
layer, written here with nn.functional: the result is one qlinear, equal to the unfolded
graph on the interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
from executors import Lambda

import modelc
from nn import functional as F

W = np.arange(-12, 12, dtype=np.int8).reshape(6, 4)
W_SCALE = np.linspace(0.01, 0.02, 6).astype(np.float32)
BIAS = np.linspace(-1, 1, 6).astype(np.float32)
ONE = np.array(1.0, np.float32)


def _dynamic_linear(x: Any, w_scale: Any = W_SCALE, bias: Any = BIAS) -> Any:
    q, scale, zero = F.dynamic_quantize_linear(x)
    acc = F.qlinear(q, ONE, zero, W, ONE, np.array(0, np.int8))
    out = acc * (scale * w_scale)
    return out + bias if bias is not None else out


def _optimized(fn: Any, x: np.ndarray) -> modelc.Graph:
    return modelc.optimize(modelc.trace(Lambda(fn), (x,)))


def test_mul_and_bias_fold_into_the_qlinear() -> None:
    x = np.linspace(-3, 2, 12, dtype=np.float32).reshape(3, 4)
    graph = _optimized(_dynamic_linear, x)
    assert [n.op for n in graph.nodes] == ["dynamic_quantize_linear", "qlinear"]
    np.testing.assert_array_equal(modelc.interpret(graph, {"input0": x})["output0"],
                                  _dynamic_linear(x))


def test_a_relu_after_the_bias_folds_as_the_activation() -> None:
    x = np.linspace(-3, 2, 12, dtype=np.float32).reshape(3, 4)
    def fn(a: Any) -> Any:
        return F.relu6(_dynamic_linear(a) * 4.0)
    graph = _optimized(fn, x)
    assert [n.op for n in graph.nodes] == ["dynamic_quantize_linear", "qlinear", "mul", "relu6"]
    def relu(a: Any) -> Any:
        return F.relu(_dynamic_linear(a))
    graph = _optimized(relu, x)
    assert [(n.op, n.attrs.get("activation")) for n in graph.nodes] == [
        ("dynamic_quantize_linear", None), ("qlinear", "relu")]
    np.testing.assert_array_equal(modelc.interpret(graph, {"input0": x})["output0"], relu(x))


def test_a_per_tensor_scale_and_no_bias_fold_too() -> None:
    x = np.linspace(-3, 2, 12, dtype=np.float32).reshape(3, 4)
    def fn(a: Any) -> Any:
        return _dynamic_linear(a, np.float32(0.015), None)
    graph = _optimized(fn, x)
    assert [n.op for n in graph.nodes] == ["dynamic_quantize_linear", "qlinear"]
    np.testing.assert_array_equal(modelc.interpret(graph, {"input0": x})["output0"], fn(x))


def test_a_scale_that_is_not_the_input_scale_times_a_constant_stays() -> None:
    x = np.linspace(-3, 2, 12, dtype=np.float32).reshape(3, 4)
    def fn(a: Any) -> Any:
        q, scale, zero = F.dynamic_quantize_linear(a)
        return F.qlinear(q, ONE, zero, W, ONE, np.array(0, np.int8)) * F.sum(a)
    assert "mul" in [n.op for n in _optimized(fn, x).nodes]


def test_a_scale_after_the_matmul_of_its_output_folds_into_the_weight_scale_and_bias() -> None:
    """Attention's ``q @ k * s`` with q from a dynamic linear (fold_scales): the multiply
    goes, the result stays within float rounding of it; an activation keeps it."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    k = rng.standard_normal((2, 3, 5)).astype(np.float32)

    def scores(a: Any, b: Any) -> Any:
        q = F.permute(F.reshape(_dynamic_linear(a), (3, 2, 3)), (1, 0, 2))  # (heads, T, hs)
        return F.mul(F.matmul(q, b), 0.25)

    graph = modelc.optimize(modelc.trace(Lambda(scores), (x, k)))
    assert "mul" not in [n.op for n in graph.nodes]
    got = modelc.interpret(graph, {"input0": x, "input1": k})["output0"]
    np.testing.assert_allclose(got, scores(x, k), rtol=1e-6, atol=1e-6)

    def activated(a: Any, b: Any) -> Any:
        q = F.permute(F.reshape(F.relu(_dynamic_linear(a)), (3, 2, 3)), (1, 0, 2))
        return F.mul(F.matmul(q, b), 0.25)

    graph = modelc.optimize(modelc.trace(Lambda(activated), (x, k)))
    assert [n.op for n in graph.nodes][-1] == "mul"
