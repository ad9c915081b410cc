"""Models at opsets newer than the importer follows (24 to 28): imported when their nodes
mean what they meant at opset 23 (or are Swish, SwiGLU or SpaceToDepth-28, which it
follows at their own version), refused naming the ops otherwise; and models older than
opset 7: as they are when their ops are the versions opset 9 has, else converted."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, opset, initializers=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
                              list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset", [24, 25, 28])
def test_ops_re_versioned_for_new_types_import(opset):
    """Reshape-25, Transpose-25 and Cast-24 (a new ``round_mode`` attribute, left unset)
    against numpy."""
    model = _model([helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
                    helper.make_node("Reshape", ["t", "shape"], ["r"]),
                    helper.make_node("Cast", ["r"], ["y"], to=TensorProto.INT32)], opset,
                   [numpy_helper.from_array(np.array([4, -1], np.int64), "shape")])
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32) * 9
    got = modelc.interpret(modelc.from_onnx(model), {"x": x})["y"]
    want = x.transpose(2, 0, 1).reshape(4, -1).astype(np.int32)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_a_new_attribute_that_is_set_is_refused():
    model = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32,
                                     round_mode="nearest")], 25)
    with pytest.raises(modelc.CompileError, match=r"ONNX opset 25: the importer follows opsets "
                       r"up to 23, and these ops of the model changed \(or are new\) since "
                       r"then: \['Cast'\]; export the model at opset 23"):
        modelc.from_onnx(model)



def test_an_op_that_dropped_element_types_imports():
    """ReduceLogSumExp-28 admits no integers any more; float32 means what it meant."""
    model = _model([helper.make_node("ReduceLogSumExp", ["x", "axes"], ["y"], keepdims=0)],
                   28, [numpy_helper.from_array(np.array([2], np.int64), "axes")])
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    got = modelc.interpret(modelc.from_onnx(model), {"x": x})["y"]
    want = np.log(np.exp(x.astype(np.float64)).sum(axis=2))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_an_opset6_model_of_ops_unchanged_until_opset9_imports():
    """Conv-1, Relu-6 and Sigmoid-6 are the versions opset 9 has: against onnx's reference."""
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(2)
    weight = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Sigmoid", ["r"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    got = modelc.interpret(modelc.from_onnx(model), {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_optional_input_added_since_and_left_out_does_not_count():
    """Attention-24 added ``nonpad_kv_seqlen`` as its last, optional input: without it, the
    node means what Attention-23 means (imported as its function); with it, refused."""
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 3, 4)).astype(np.float32) for _ in range(3))
    infos = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 2, 3, 4]) for n in "qkv"]
    out = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]

    def model(inputs):
        node = helper.make_node("Attention", inputs, ["y"], is_causal=1)
        extra = [] if len(inputs) == 3 else [helper.make_tensor_value_info(
            "lengths", TensorProto.INT64, [1])]
        graph = helper.make_graph([node], "g", infos + extra, out)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])

    plain = model(["q", "k", "v"])
    (want,) = ReferenceEvaluator(plain).run(None, {"q": q, "k": k, "v": v})
    got = modelc.interpret(modelc.from_onnx(plain), {"q": q, "k": k, "v": v})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(modelc.CompileError, match=r"opset 24: .* since then: \['Attention'\]"):
        modelc.from_onnx(model(["q", "k", "v", "", "", "", "lengths"]))


def test_an_opset6_prelu_slope_is_per_channel_after_conversion():
    """PRelu-6 takes a slope of C values per channel (axis 1); the model is converted (with a
    warning) and the slope reshaped to (C, 1, 1), against numpy's formula."""
    rng = np.random.default_rng(4)
    slope = rng.standard_normal(3).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("PRelu", ["x", "s"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(slope, "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    with pytest.warns(UserWarning, match="opset 6; converting it to opset 9"):
        imported = modelc.from_onnx(model)
    want = np.where(x < 0, x * slope.reshape(3, 1, 1), x)
    np.testing.assert_allclose(modelc.interpret(imported, {"x": x})["y"], want, rtol=1e-6)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_ops_new_since_opset23_that_the_importer_follows_run_in_wasm(kernels):
    """Swish-24 (alpha 1 is SiLU's kernel, others a composite) and SwiGLU-28, against
    numpy's formula (onnxruntime does not run these opsets)."""
    import runtime

    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((2, 3, 8)).astype(np.float32) * 3 for _ in range(2))
    infos = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3, 8]) for name in "ab"]
    graph = helper.make_graph(
        [helper.make_node("Swish", ["a"], ["s"]),
         helper.make_node("Swish", ["b"], ["t"], alpha=0.7),
         helper.make_node("SwiGLU", ["s", "t"], ["y"], alpha=1.5)], "g", infos,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])

    def swish(x, alpha=1.0):
        return x / (1 + np.exp(-alpha * x.astype(np.float64)))

    want = swish(swish(a), 1.5) * swish(b, 0.7)
    with runtime.load(modelc.export(modelc.from_onnx(model)), kernels=kernels) as session:
        got = session.run({"a": a, "b": b})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_28_takes_its_mode(mode):
    """SpaceToDepth-28's ``mode``: against numpy's rearrangement of (N, C, H/b, b, W/b, b)."""
    import runtime

    x = np.random.default_rng(6).standard_normal((2, 3, 4, 6)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode=mode)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])
    blocks = x.reshape(2, 3, 2, 2, 3, 2)  # (N, C, H/b, b, W/b, b)
    order = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    want = blocks.transpose(order).reshape(2, 12, 2, 3)
    with runtime.load(modelc.export(modelc.from_onnx(model))) as session:
        np.testing.assert_array_equal(session.run({"x": x})["y"], want)
