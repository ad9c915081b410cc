"""ONNX ops without an import function of their own, imported as the ONNX function their
schema defines them by, run in wasm and compared with onnx's reference evaluator."""

from __future__ import annotations

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
runtime = pytest.importorskip("runtime")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

_rng = np.random.default_rng(0)


def _model(node, inputs, opset, initializers=()):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(name, TensorProto.FLOAT, value.shape)
                      for name, value in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output],
        [numpy_helper.from_array(v, k) for k, v in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check_in_wasm(model, inputs):
    want = ReferenceEvaluator(model).run(None, inputs)
    with runtime.load(modelc.export(modelc.from_onnx(model))) as session:
        got = session.run(inputs)
    for name, value in zip([o.name for o in model.graph.output], want):
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", [{}, {"is_causal": 1, "scale": 0.5}])
def test_attention_imports_as_its_function(attrs):
    """Attention-23 has no import function: its context-dependent function body."""
    q, k, v = (_rng.standard_normal((2, 3, 4, 8)).astype(np.float32) for _ in range(3))
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], **attrs)
    _check_in_wasm(_model(node, {"q": q, "k": k, "v": v}, 23), {"q": q, "k": k, "v": v})


def test_reduce_l1_imports_as_its_function():
    x = _rng.standard_normal((3, 4, 5)).astype(np.float32) * 4
    node = helper.make_node("ReduceL1", ["x", "axes"], ["y"], keepdims=0)
    _check_in_wasm(_model(node, {"x": x}, 18, [("axes", np.array([1, 2], np.int64))]),
                   {"x": x})


def test_a_function_body_with_subgraphs_reads_the_function_tensors():
    """AffineGrid's body has If branches that read its own tensors (renamed with them)."""
    theta = _rng.standard_normal((2, 2, 3)).astype(np.float32)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=1)
    model = _model(node, {"theta": theta}, 20, [("size", np.array([2, 3, 4, 5], np.int64))])
    _check_in_wasm(model, {"theta": theta})


def test_a_function_using_an_unsupported_op_is_refused_naming_both():
    node = helper.make_node("Bernoulli", ["x"], ["y"], name="coin")
    model = _model(node, {"x": np.zeros(3, np.float32)}, 15)
    with pytest.raises(modelc.UnsupportedOpError, match=r"'coin' \(Bernoulli\) is defined by "
                       r"an ONNX function using unsupported ops \['RandomUniformLike'\]"):
        modelc.from_onnx(model)
