"""ONNX-ML ops (``ai.onnx.ml``) as skl2onnx writes them, against onnxruntime in the
interpreter and on every kernel provider: Scaler with one value or one per feature, on float32
and integer features; a wrong count of values, and ops not covered, are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
TensorProto, helper = onnx.TensorProto, onnx.helper

_rng = np.random.default_rng(11)


def _model(op, dtype=TensorProto.FLOAT, features=4, **attrs):
    node = helper.make_node(op, ["x"], ["y"], name="ml", domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph(
        [node, helper.make_node("Relu", ["y"], ["z"])], "g",
        [helper.make_tensor_value_info("x", dtype, [3, features])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [3, features])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("ai.onnx.ml", 3)],
                             ir_version=8)


@pytest.mark.parametrize("attrs", [
    {"offset": [60.0, 1.5, 5.0, -0.5], "scale": [0.025, 0.9, 0.3, 1.2]},
    {"offset": [2.0], "scale": [0.5]},
])
@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32])
def test_scaler_matches_onnxruntime(attrs, dtype, check_against_ort, check_wasm_against_ort):
    model = _model("Scaler", dtype, **attrs)
    x = _rng.normal([60, 1.5, 5, 0], [30, 1, 3, 1], (3, 4))
    feeds = {"x": x.astype(helper.tensor_dtype_to_np_dtype(dtype))}
    check_against_ort(model, [feeds])
    check_wasm_against_ort(model, feeds)


def test_scaler_with_a_wrong_count_is_refused():
    with pytest.raises(modelc.CompileError, match=r"'ml' \(Scaler\): scale has 3 values, "
                                                  r"expected 1 or 4"):
        modelc.from_onnx(_model("Scaler", offset=[0.0], scale=[1.0, 2.0, 3.0]))
    with pytest.raises(modelc.CompileError, match=r"'ml' \(Scaler\): needs the attribute "
                                                  r"'offset'"):
        modelc.from_onnx(_model("Scaler", scale=[1.0]))


def test_uncovered_ml_ops_are_named():
    with pytest.raises(modelc.UnsupportedOpError, match=r"'ml' \(ai.onnx.ml.Normalizer\)"):
        modelc.from_onnx(_model("Normalizer", norm="L2"))
