"""flush_subnormal_weights on a conv, a transposed conv and a MatMul whose weights are partly
subnormal (as in PP-OCRv6's det head): no subnormal weight is left, and the result is
onnxruntime's on every kernel provider; a constant shared with another op keeps its values."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

_rng = np.random.default_rng(0)
TINY = np.finfo(np.float32).tiny


def _partly_subnormal(*shape: int) -> np.ndarray:
    """Normal weights, with about half of them replaced by subnormals of either sign."""
    normal = _rng.standard_normal(shape).astype(np.float32)
    tiny = (_rng.uniform(-1, 1, shape) * TINY).astype(np.float32)
    return np.where(_rng.random(shape) < 0.5, tiny, normal).astype(np.float32)


def _model() -> bytes:
    inits = [numpy_helper.from_array(_partly_subnormal(6, 4, 3, 3), "wc"),
             numpy_helper.from_array(_partly_subnormal(6), "bc"),
             numpy_helper.from_array(_partly_subnormal(6, 3, 2, 2), "wt"),
             numpy_helper.from_array(_partly_subnormal(10, 5), "wm")]
    nodes = [helper.make_node("Conv", ["x", "wc", "bc"], ["c"], kernel_shape=[3, 3]),
             helper.make_node("ConvTranspose", ["c", "wt"], ["t"], kernel_shape=[2, 2]),
             helper.make_node("MatMul", ["t", "wm"], ["y"])]
    graph = helper.make_graph(
        nodes, "subnormal", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 11])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]) \
        .SerializeToString()


def test_subnormal_weights_are_flushed_and_results_match_onnxruntime(check_against_ort,
                                                                    check_wasm_against_ort):
    model = _model()
    x = {"x": _rng.standard_normal((1, 4, 8, 11)).astype(np.float32)}
    graph = check_against_ort(model, [x])
    weights = [v.data for n in graph.nodes for name, v in zip(n.input_names, n.inputs)
               if name in ("weight", "bias") and v.data is not None]
    assert len(weights) >= 4
    for data in weights:
        magnitude = np.abs(data)
        assert not ((magnitude > 0) & (magnitude < TINY)).any()
    check_wasm_against_ort(model, x)


def test_a_constant_shared_with_another_op_keeps_its_subnormals():
    import modelc
    from modelc.passes import flush_subnormal_weights

    bias = _partly_subnormal(6)
    inits = [numpy_helper.from_array(_rng.standard_normal((6, 4, 1, 1)).astype(np.float32),
                                     "w"), numpy_helper.from_array(bias, "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["x6", "b"], ["y"])]
    graph = helper.make_graph(
        nodes, "shared", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2]),
                          helper.make_tensor_value_info("x6", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    g = flush_subnormal_weights(modelc.from_onnx(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)])))
    g.verify()
    (conv,) = [n for n in g.nodes if n.op == "conv2d"]
    (add,) = [n for n in g.nodes if n.op == "add"]
    flushed_bias = conv.named_inputs()["bias"].data
    assert np.array_equal(flushed_bias, np.where(np.abs(bias) < TINY, 0, bias))
    assert any(v.data is not None and np.array_equal(v.data, bias) for v in add.inputs)
