"""onnxruntime's com.microsoft FusedConv and FusedGemm against onnxruntime, in the interpreter
and on every kernel provider: models onnxruntime's own optimizer saved (Conv or Gemm followed by
each activation it fuses), and hand-made FusedConvs with and without the sum input Z, 1-D and
2-D, strides, groups and pads; bad activations are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
TensorProto, helper = onnx.TensorProto, onnx.helper

_rng = np.random.default_rng(5)


def _model(x_shape, w_shape, z_shape=None, **attrs):
    inputs = ["x", "w", "b"] + (["z"] if z_shape else [])
    node = helper.make_node("FusedConv", inputs, ["y"], name="fc", domain="com.microsoft",
                            **attrs)
    weights = [helper.make_tensor("w", TensorProto.FLOAT, w_shape,
                                  _rng.standard_normal(w_shape).astype(np.float32).ravel()),
               helper.make_tensor("b", TensorProto.FLOAT, [w_shape[0]],
                                  _rng.standard_normal(w_shape[0]).astype(np.float32))]
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    if z_shape:
        graph_inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, z_shape))
    graph = helper.make_graph([node], "g", graph_inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)],
                             ir_version=8)


@pytest.mark.parametrize("activation, params", [
    ("Relu", []), ("Tanh", []), ("Sigmoid", []), ("LeakyRelu", [0.2]),
    ("HardSigmoid", [0.25, 0.4]), ("Clip", [-0.5, 1.5]), ("", []),
])
@pytest.mark.parametrize("with_z", [False, True])
def test_fused_conv_matches_onnxruntime(activation, params, with_z, check_against_ort,
                                        check_wasm_against_ort):
    attrs = {"activation": activation} if activation else {}
    if params:
        attrs["activation_params"] = params
    z_shape = [1, 6, 5, 11] if with_z else None  # the conv's output
    model = _model([1, 4, 9, 11], [6, 2, 3, 3], z_shape, group=2, strides=[2, 1],
                   pads=[1, 0, 1, 2], **attrs)
    feeds = {"x": _rng.standard_normal((1, 4, 9, 11)).astype(np.float32)}
    if z_shape:
        feeds["z"] = _rng.standard_normal(z_shape).astype(np.float32)
    check_against_ort(model, [feeds])
    check_wasm_against_ort(model, feeds)


def test_fused_conv_1d_as_onnxruntime_saves_it(check_wasm_against_ort):
    model = _model([1, 8, 40], [8, 1, 5], group=8, pads=[2, 2], dilations=[1],
                   activation="Relu")
    check_wasm_against_ort(model, {"x": _rng.standard_normal((1, 8, 40)).astype(np.float32)})


@pytest.mark.parametrize("attrs, message", [
    ({"activation": "Softplus"}, r"'fc' \(FusedConv\): activation 'Softplus' is not one of"),
    ({"activation": "LeakyRelu"}, r"'fc' \(FusedConv\): activation LeakyRelu needs "
                                  r"1 parameter\(s\) \('alpha',\), got \[\]"),
])
def test_bad_activation_is_refused(attrs, message):
    with pytest.raises(modelc.CompileError, match=message):
        modelc.from_onnx(_model([1, 2, 5, 5], [2, 2, 3, 3], **attrs))


_BOTH = [("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("LeakyRelu", {"alpha": 0.2}),
         ("HardSigmoid", {"alpha": 0.3, "beta": 0.4})]
_FUSED = ([("Conv", *a) for a in [*_BOTH, ("Clip", {})]]
          + [("Gemm", *a) for a in [*_BOTH, ("Elu", {"alpha": 0.5}),
                                     ("Selu", {"alpha": 1.2, "gamma": 0.9}), ("Softplus", {}),
                                     ("Softsign", {}), ("ThresholdedRelu", {"alpha": 0.3})]])
"""What onnxruntime 1.2x fuses (Conv + Elu, Gemm + Clip and the like stay two nodes)."""


def _saved_by_onnxruntime(layer: str, activation: str, attrs: dict, path):
    """A Conv or Gemm then ``activation``, and the model onnxruntime's optimizer saves."""
    ort = pytest.importorskip("onnxruntime")
    conv = layer == "Conv"
    w_shape, x_shape, y_shape = (([4, 2, 3, 3], [1, 2, 6, 5], [1, 4, 6, 5]) if conv
                                 else ([4, 3], [2, 3], [2, 4]))
    weights = [onnx.numpy_helper.from_array(array.astype(np.float32), name) for name, array in
               (("w", _rng.standard_normal(w_shape)), ("b", _rng.standard_normal(4)),
                ("lo", np.array(-0.5)), ("hi", np.array(0.5)))]
    bounds = ["lo", "hi"] if activation == "Clip" else []
    first = (helper.make_node("Conv", ["x", "w", "b"], ["t"], pads=[1, 1, 1, 1]) if conv
             else helper.make_node("Gemm", ["x", "w", "b"], ["t"], transB=1))
    graph = helper.make_graph(
        [first, helper.make_node(activation, ["t", *bounds], ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [w for w in weights if w.name in {"w", "b", *bounds}])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(path)
    ort.InferenceSession(model.SerializeToString(), options,
                         providers=["CPUExecutionProvider"])
    return model, onnx.load(str(path)), x_shape


@pytest.mark.parametrize("layer, activation, attrs", _FUSED)
def test_models_onnxruntime_saved_match_it(layer, activation, attrs, tmp_path,
                                           check_against_ort, check_wasm_against_ort):
    model, saved, x_shape = _saved_by_onnxruntime(layer, activation, attrs,
                                                  tmp_path / "saved.onnx")
    assert [n.op_type for n in saved.graph.node] == [f"Fused{layer}"]
    feeds = {"x": _rng.standard_normal(x_shape).astype(np.float32)}
    check_against_ort(saved, [feeds])
    check_wasm_against_ort(saved, feeds)
    reference = pytest.importorskip("onnx.reference")
    want = reference.ReferenceEvaluator(model).run(None, feeds)[0]
    got = modelc.interpret(modelc.from_onnx(saved), feeds)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
