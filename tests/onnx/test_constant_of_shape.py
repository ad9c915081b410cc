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
