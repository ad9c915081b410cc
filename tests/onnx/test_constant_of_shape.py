"""ConstantOfShape over a symbolic batch: a run-time ``full`` (torch.onnx's pattern for the
zero initial states of an LSTM), against onnxruntime in wasm."""

from __future__ import annotations

import numpy as np
import pytest

import modelc
import runtime

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper


def test_onnx_constant_of_shape_over_a_symbolic_batch_matches_onnxruntime(
        compare_with_ort: object) -> None:
    nodes = [helper.make_node("Shape", ["X"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["z"],
                              value=numpy_helper.from_array(np.array([0.25], np.float32))),
             helper.make_node("Add", ["X", "z"], ["Y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "X", TensorProto.FLOAT, ["batch", 4])], [helper.make_tensor_value_info(
            "Y", TensorProto.FLOAT, ["batch", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    wasm = modelc.export(modelc.from_onnx(model))
    with runtime.load(wasm) as session:
        for batch in (1, 6):
            feeds = {"X": np.random.default_rng(batch).standard_normal((batch, 4)
                                                                       ).astype(np.float32)}
            compare_with_ort(session.run(feeds), model, feeds, f"batch {batch}")  # type: ignore[operator]


@pytest.mark.parametrize("kernels", ["relaxed", "simd128", "scalar", "host"])
def test_outputs_known_at_import_are_returned_like_any_other(kernels: str) -> None:
    """A ConstantOfShape of a fixed shape and a uint8 Constant, both graph outputs beside a
    computed one: the outputs onnxruntime gives, of their own dtypes."""
    ort = pytest.importorskip("onnxruntime")
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["filled"],
                              value=numpy_helper.from_array(np.array([1.5], np.float32))),
             helper.make_node("Constant", [], ["table"], value=numpy_helper.from_array(
                 np.array([[3, 250], [0, 7]], np.uint8))),
             helper.make_node("Relu", ["X"], ["Y"])]
    outputs = [helper.make_tensor_value_info(name, dtype, shape) for name, dtype, shape in (
        ("filled", TensorProto.FLOAT, [2, 3]), ("table", TensorProto.UINT8, [2, 2]),
        ("Y", TensorProto.FLOAT, [4]))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "X", TensorProto.FLOAT, [4])], outputs,
        [numpy_helper.from_array(np.array([2, 3], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"X": np.array([-1.0, 2.0, -3.0, 4.0], np.float32)}
    wants = ort.InferenceSession(model.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, feeds)
    with runtime.load(modelc.export(modelc.from_onnx(model)), kernels=kernels) as session:
        got = session.run(feeds)
    for name, want in zip(("filled", "table", "Y"), wants, strict=True):
        assert got[name].dtype == want.dtype
        np.testing.assert_array_equal(got[name], want)
