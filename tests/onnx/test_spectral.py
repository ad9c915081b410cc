"""DFT (opsets 17 and 20) and STFT as products with constant DFT matrices: forward, inverse,
one-sided, real and complex signals, shorter and longer ``dft_length``, every axis, on every
kernel provider against onnxruntime and onnx's reference evaluator, and the matrices against
numpy's FFT."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
from modelc.onnx.ops_spectral import dft_matrix

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

runtime = pytest.importorskip("runtime")
ort = pytest.importorskip("onnxruntime")

_rng = np.random.default_rng(5)


def _model(op, x_shape, consts, attrs, opset, names):
    node = helper.make_node(op, names, ["y"], name="t", **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(names[0], TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=9)


def _check(model, x, assert_close, with_ort=True):
    feeds = {model.graph.input[0].name: x}
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    if with_ort:
        assert_close(ort.InferenceSession(model.SerializeToString(),
                                          providers=["CPUExecutionProvider"]).run(None, feeds)[0],
                     want, "onnxruntime vs reference")
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            assert_close(session.run(feeds)["y"], want, kernels)


@pytest.mark.parametrize("inverse, onesided, channels", [
    (0, 0, 1), (0, 0, 2), (0, 1, 1), (1, 0, 2), (1, 1, 2)])
@pytest.mark.parametrize("length", [None, 6, 13])
@pytest.mark.parametrize("opset, axis", [(17, 1), (20, 2), (20, -3)])
def test_dft_matches_references_on_every_provider(inverse, onesided, channels, length, opset,
                                                  axis, close):
    shape = (2, 9, 5, channels)
    consts, names = {}, ["x", ""]
    if length is not None:
        consts["n"] = np.array(length, np.int64)
        names[1] = "n"
    attrs = {"inverse": inverse, "onesided": onesided}
    if opset == 17:
        attrs["axis"] = axis
    else:
        consts["axis"] = np.array(axis, np.int64)
        names.append("axis")
    model = _model("DFT", shape, consts, attrs, opset, names)
    # NOTE: given more bins than an inverse one-sided DFT of dft_length uses, onnxruntime
    # reads them too; numpy's irfft and onnx's reference drop them (wasmnn follows them)
    extra = inverse and onesided and length is not None and shape[axis] > length // 2 + 1
    _check(model, _rng.standard_normal(shape).astype(np.float32), close, not extra)


@pytest.mark.parametrize("window, onesided, channels", [(True, 1, 1), (False, 0, 2),
                                                        (True, 0, 1)])
def test_stft_matches_references_on_every_provider(window, onesided, channels, close):
    consts = {"step": np.array(5, np.int64), "length": np.array(16, np.int64)}
    names = ["x", "step", "", "length"]
    if window:
        consts["window"] = np.hanning(16).astype(np.float32)
        names[2] = "window"
    shape = (2, 70, channels)
    model = _model("STFT", shape, consts, {"onesided": onesided}, 17, names)
    _check(model, _rng.standard_normal(shape).astype(np.float32), close)


@pytest.mark.parametrize("size, length", [(8, 8), (8, 5), (5, 8), (7, 7)])
def test_dft_matrix_is_numpys_fft(size, length):
    x = _rng.standard_normal(size) + 1j * _rng.standard_normal(size)
    pairs = np.stack([x.real, x.imag], axis=1).reshape(-1).astype(np.float32)
    for inverse, fft in ((False, np.fft.fft), (True, np.fft.ifft)):
        got = (dft_matrix(size, 2, length, inverse, False) @ pairs).reshape(-1, 2)
        np.testing.assert_allclose(got[:, 0] + 1j * got[:, 1], fft(x, length), atol=1e-5)
    got = dft_matrix(size, 1, length, False, True) @ x.real.astype(np.float32)
    np.testing.assert_allclose(got.reshape(-1, 2) @ [1, 1j], np.fft.rfft(x.real, length),
                               atol=1e-5)
    got = dft_matrix(size, 2, length, True, True) @ pairs
    np.testing.assert_allclose(got, np.fft.irfft(x, length), atol=1e-5)


def test_a_signal_along_the_last_axis_is_refused():
    model = _model("DFT", (2, 8), {}, {"axis": 1}, 17, ["x"])
    with pytest.raises(modelc.CompileError, match=r"'t' \(DFT\): expected a signal axis other "
                                                  r"than the last"):
        modelc.from_onnx(model)


@pytest.mark.parametrize("op", ["DFT", "STFT"])
def test_a_symbolic_batch_runs_at_several_sizes(op, close):
    if op == "DFT":
        model = _model("DFT", ["b", 9, 5, 1], {}, {"axis": 1, "onesided": 1}, 17, ["x"])
        shape = (9, 5, 1)
    else:
        model = _model("STFT", ["b", 70, 1], {"step": np.array(5, np.int64),
                                              "length": np.array(16, np.int64)}, {}, 17,
                       ["x", "step", "", "length"])
        shape = (70, 1)
    wasm = modelc.export(modelc.from_onnx(model, dynamic={"x": {0: ("b", 1, 8)}}))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with runtime.load(wasm) as ours:
        for batch in (1, 3):
            x = _rng.standard_normal((batch, *shape)).astype(np.float32)
            close(ours.run({"x": x})["y"], session.run(None, {"x": x})[0], f"batch {batch}")


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows_of_a_known_size_fold_to_the_references(op, periodic):
    node = helper.make_node(op, ["size"], ["y"], periodic=periodic)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)], [numpy_helper.from_array(np.array(10, np.int64), "size")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    want = ReferenceEvaluator(model).run(None, {})[0]
    got = modelc.from_onnx(model).outputs["y"].data
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_stft_with_a_hann_window_node_matches_onnxruntime(close):
    nodes = [helper.make_node("HannWindow", ["size"], ["window"]),
             helper.make_node("STFT", ["x", "step", "window"], ["y"])]
    consts = {"size": np.array(16, np.int64), "step": np.array(4, np.int64)}
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 80, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    _check(model, _rng.standard_normal((1, 80, 1)).astype(np.float32), close)
