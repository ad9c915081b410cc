"""Elementwise and activation ops from ONNX (rounding, Sign, Mod, Sin/Cos, Tan, the inverse
and hyperbolic trigonometric ops, the exponential family, Shrink, PRelu per channel,
LogSoftmax on inner axes), compiled to wasm and run on every kernel provider against
onnxruntime within 1e-4; Sin and Cos within their kernels' documented 2e-7 absolute error on
|x| <= 8192 (the inputs here stay within 30)."""

from __future__ import annotations

import sys
from typing import Any
from pathlib import Path

import numpy as np
import pytest
from executors import PROVIDERS

sys.path.insert(0, str(Path(__file__).parent))
from single_node import Run, r, single_node

import modelc

X = r(2, 3, 4, 5) * 3
# NOTE: quarter steps hit exact ties of Round (ties to even) and the integers of Floor/Ceil.
TIES = (np.arange(-60, 60).reshape(2, 3, 4, 5) / 4).astype(np.float32)

# id: (op, operands, attrs, opset), as test_ops.CASES
CASES: dict[str, tuple] = {
    "floor": ("Floor", [Run(TIES + X * 0.01)], {}, 13),
    "ceil": ("Ceil", [Run(TIES - X * 0.01)], {}, 13),
    "round_ties_to_even": ("Round", [Run(TIES)], {}, 11),
    "sign": ("Sign", [Run(np.where(np.abs(X) < 1, 0, X).astype(np.float32))], {}, 13),
    "sin": ("Sin", [Run(X * 10)], {}, 13),
    "cos": ("Cos", [Run(X * 10)], {}, 13),
    "elu": ("Elu", [Run(X)], {"alpha": 0.7}, 13),
    "selu_defaults": ("Selu", [Run(X)], {}, 13),
    "selu_attrs": ("Selu", [Run(X)], {"alpha": 1.2, "gamma": 0.9}, 13),
    "celu": ("Celu", [Run(X)], {"alpha": 1.5}, 12),
    "softplus": ("Softplus", [Run(X * 10)], {}, 13),
    "softsign": ("Softsign", [Run(X)], {}, 13),
    "mish": ("Mish", [Run(X * 5)], {}, 18),
    "shrink_hard": ("Shrink", [Run(X)], {"lambd": 1.5}, 13),
    "shrink_soft": ("Shrink", [Run(X)], {"lambd": 1.0, "bias": 1.0}, 13),
    "thresholded_relu": ("ThresholdedRelu", [Run(X)], {"alpha": 0.5}, 13),
    "mod_fmod": ("Mod", [Run(X * 4), (np.abs(r(3, 1, 5)) + 0.5) * np.sign(r(3, 1, 5))],
                 {"fmod": 1}, 13),
    **{op.lower(): (op, [Run(x)], {}, 13) for op, x in [
        ("Tan", X / 4), ("Atan", X * 3), ("Asin", np.tanh(X)), ("Acos", np.tanh(X)),
        ("Sinh", X), ("Cosh", X), ("Asinh", X * 3), ("Acosh", np.abs(X) + 1),
        ("Atanh", np.tanh(X))]},
    "prelu_per_channel": ("PRelu", [Run(X), r(3, 1, 1)], {}, 16),
    "hard_sigmoid_attrs": ("HardSigmoid", [Run(X)], {"alpha": 0.3, "beta": 0.4}, 13),
    "leaky_relu": ("LeakyRelu", [Run(X)], {"alpha": 0.2}, 16),
    "log_softmax_axis1": ("LogSoftmax", [Run(X)], {"axis": 1}, 13),
    "log_softmax_axis2": ("LogSoftmax", [Run(X)], {"axis": -2}, 13),
    "log_softmax_legacy_flatten": ("LogSoftmax", [Run(X)], {"axis": 2}, 11),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_in_wasm_matches_onnxruntime(case, check_wasm_against_ort):
    check_wasm_against_ort(*single_node(*CASES[case]))


def test_integer_mod_of_known_values_folds_like_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    a, b = np.array([-7, 7, -7, 5], np.int64), np.array([3, -3, -3, 5], np.int64)
    for fmod in (0, 1):
        model, _ = single_node("Mod", [a, b], {"fmod": fmod}, 13)
        (got,) = modelc.from_onnx(model).outputs.values()
        (want,) = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None, {})
        assert got.is_constant and got.data.tolist() == want.tolist()


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_float_floor_remainder_runs_in_wasm_as_numpy(kernels):
    """Mod with fmod=0 on floats (ONNX defines it from opset 28; onnxruntime refuses it
    before): numpy's ``mod``, infinite and zero divisors included."""
    import runtime

    a = np.concatenate([X.ravel() * 4, [0.0, -3.0, 3.0, -1.0, 1.0, np.inf, 1.0]])
    b = np.concatenate([(np.abs(X.ravel()) + 0.5) * np.sign(X.ravel()[::-1]),
                        [-2.0, np.inf, np.inf, -np.inf, -np.inf, 2.0, 0.0]])
    a, b = a.astype(np.float32), b.astype(np.float32)
    model, feeds = single_node("Mod", [Run(a), Run(b)], {"fmod": 0}, 13)
    with runtime.load(modelc.export(modelc.from_onnx(model)), kernels=kernels) as session:
        (got,) = session.run(feeds).values()
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.mod(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _gelu_tanh_as_jax2tf_exports_it() -> Any:
    """magika's GELU: Mul, Mul, Mul, Add, Mul, Tanh, Add, Mul, Mul with float32 constants."""
    from onnx import TensorProto, helper, numpy_helper

    def const(name: str, value: float) -> Any:
        return numpy_helper.from_array(np.array(value, np.float32), name)

    nodes = [helper.make_node("Mul", ["cubic", "x"], ["m1"]),
             helper.make_node("Mul", ["x", "m1"], ["m2"]),
             helper.make_node("Mul", ["x", "m2"], ["m3"]),
             helper.make_node("Add", ["x", "m3"], ["a1"]),
             helper.make_node("Mul", ["scale", "a1"], ["m4"]),
             helper.make_node("Tanh", ["m4"], ["t"]),
             helper.make_node("Add", ["one", "t"], ["a2"]),
             helper.make_node("Mul", ["half", "a2"], ["m5"]),
             helper.make_node("Mul", ["x", "m5"], ["y"])]
    graph = helper.make_graph(
        nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [const("cubic", 0.044715), const("scale", np.sqrt(2 / np.pi)), const("one", 1.0),
         const("half", 0.5)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("build", ["jax2tf", "Gelu_20"])
def test_gelu_tanh_is_one_node_and_matches_onnxruntime(build, check_against_ort,
                                                       check_wasm_against_ort):
    if build == "jax2tf":
        model, feeds = _gelu_tanh_as_jax2tf_exports_it(), {"x": X * 4}
    else:
        model, feeds = single_node("Gelu", [Run(X * 4)], {"approximate": "tanh"}, 20)
    graph = check_against_ort(model, [feeds])
    assert [n.op for n in graph.nodes] == ["gelu_tanh"]
    check_wasm_against_ort(model, feeds)


def _gelu_as_tf2onnx_exports_it() -> Any:
    """Keras's exact GELU as tf2onnx writes it (magika): ``(0.5 * x) * (1 + erf(x * c))``,
    c = float32(1 / sqrt(2))."""
    from onnx import TensorProto, helper, numpy_helper

    def const(name: str, value: float) -> Any:
        return numpy_helper.from_array(np.array(value, np.float32), name)

    nodes = [helper.make_node("Mul", ["half", "x"], ["m1"]),
             helper.make_node("Mul", ["x", "c"], ["m2"]),
             helper.make_node("Erf", ["m2"], ["e"]),
             helper.make_node("Add", ["one", "e"], ["a"]),
             helper.make_node("Mul", ["m1", "a"], ["y"])]
    graph = helper.make_graph(
        nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [const("half", 0.5), const("c", 1 / np.sqrt(2)), const("one", 1.0)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_gelu_as_tf2onnx_writes_it_is_one_node_and_matches_onnxruntime(
        check_against_ort, check_wasm_against_ort):
    model, feeds = _gelu_as_tf2onnx_exports_it(), {"x": X * 2}
    graph = check_against_ort(model, [feeds])
    assert [n.op for n in graph.nodes] == ["gelu"]
    check_wasm_against_ort(model, feeds)
