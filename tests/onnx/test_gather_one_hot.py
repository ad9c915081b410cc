"""gather_one_hot on the one-hot matmul as jax2tf exports it (magika's byte embedding:
Equal against a range, Cast, MatMul, Add): one gather of rows, the same result as
onnxruntime on every kernel provider, out-of-range indices (an all-zero one-hot row)
included."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

_rng = np.random.default_rng(0)
N, DIM = 11, 6


def _model(index_type: int, values: np.ndarray, bias: bool = True) -> bytes:
    inits = [numpy_helper.from_array(np.array([1, 3, 1], np.int64), "shape"),
             numpy_helper.from_array(values.reshape(1, 1, -1), "values"),
             numpy_helper.from_array(_rng.standard_normal((len(values), DIM))
                                     .astype(np.float32), "w"),
             numpy_helper.from_array(_rng.standard_normal(DIM).astype(np.float32), "b")]
    nodes = [helper.make_node("Reshape", ["i", "shape"], ["col"]),
             helper.make_node("Equal", ["col", "values"], ["hot"]),
             helper.make_node("Cast", ["hot"], ["hotf"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["hotf", "w"], ["mm"])]
    if bias:
        nodes.append(helper.make_node("Add", ["mm", "b"], ["y"]))
    graph = helper.make_graph(nodes, "one_hot",
                              [helper.make_tensor_value_info("i", index_type, [1, 3])],
                              [helper.make_tensor_value_info("y" if bias else "mm",
                                                             TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]) \
        .SerializeToString()


@pytest.mark.parametrize("dtype, bias", [(np.int32, True), (np.int64, True), (np.int32, False)])
def test_one_hot_matmul_is_a_gather_and_matches_onnxruntime(dtype, bias, check_against_ort,
                                                            check_wasm_against_ort):
    index_type = TensorProto.INT32 if dtype == np.int32 else TensorProto.INT64
    model = _model(index_type, np.arange(N).astype(dtype), bias)
    inputs = [{"i": np.array([[0, 7, N - 1]], dtype)}, {"i": np.array([[-1, N, 3]], dtype)},
              {"i": np.array([[-(2 ** 31), 2 ** 31 - 1, N + 5]], dtype)}]
    graph = check_against_ort(model, inputs)
    assert "embedding" in graph.ops() and "linear" not in graph.ops()
    for feed in inputs:
        check_wasm_against_ort(model, feed)


def test_a_one_hot_over_other_values_stays_a_matmul(check_against_ort):
    model = _model(TensorProto.INT32, (np.arange(N) * 2).astype(np.int32))
    graph = check_against_ort(model, [{"i": np.array([[0, 4, 5]], np.int32)}])
    assert "embedding" not in graph.ops() and "linear" in graph.ops()



def _one_hot_model(values: tuple[float, float], reshape: bool) -> bytes:
    """ONNX OneHot over the last axis, then (reshaped to rows or not) a MatMul and an Add,
    as tf2onnx exports Keras's one-hot byte embedding (magika v1)."""
    inits = [numpy_helper.from_array(np.array([N], np.int64), "depth"),
             numpy_helper.from_array(np.array(values, np.float32), "values"),
             numpy_helper.from_array(np.array([-1, N], np.int64), "rows"),
             numpy_helper.from_array(_rng.standard_normal((N, DIM)).astype(np.float32), "w"),
             numpy_helper.from_array(_rng.standard_normal(DIM).astype(np.float32), "b")]
    nodes = [helper.make_node("OneHot", ["i", "depth", "values"], ["hot"], axis=-1)]
    if reshape:
        nodes.append(helper.make_node("Reshape", ["hot", "rows"], ["flat"]))
    nodes += [helper.make_node("MatMul", ["flat" if reshape else "hot", "w"], ["mm"]),
              helper.make_node("Add", ["mm", "b"], ["y"])]
    graph = helper.make_graph(nodes, "one_hot",
                              [helper.make_tensor_value_info("i", TensorProto.INT64, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]) \
        .SerializeToString()


@pytest.mark.parametrize("values", [(0.0, 1.0), (-0.5, 2.0)])
@pytest.mark.parametrize("reshape", [True, False])
def test_onnx_one_hot_matmul_is_one_gather_and_matches_onnxruntime(
        values, reshape, check_against_ort, check_wasm_against_ort):
    model = _one_hot_model(values, reshape)
    inputs = [{"i": np.array([[0, 7, N - 1], [-1, -N, 3]], np.int64)},
              {"i": np.array([[N, -N - 1, 2 ** 40], [-(2 ** 40), 1, 0]], np.int64)}]
    graph = check_against_ort(model, inputs)
    assert [n.op for n in graph.nodes].count("embedding") == 1
    assert not {"linear", "eq", "cast"} & set(graph.ops())
    for feed in inputs:
        check_wasm_against_ort(model, feed)
