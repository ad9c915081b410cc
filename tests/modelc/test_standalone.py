"""Standalone exports run under wasmnn's WASI and Node's WASI with the same numbers."""

import io
import shutil

import numpy as np
import pytest
from standalone_runners import npy, run_node, run_wasi

import modelc
from wasm_kernels import abi
from wasm_kernels.wasm import read_module


@pytest.fixture(scope="module")
def standalone() -> tuple[object, bytes]:
    import nn
    np.random.seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5)).eval()
    wasm = modelc.export(model, (np.zeros((2, 12), np.float32),), standalone=True,
                         dynamic={"input0": {0: ("batch", 1, 33)}})
    return model, wasm


def test_imports_only_wasi_and_contains_the_kernels(standalone):
    _, wasm = standalone
    info = read_module(wasm)
    assert {i.module for i in info.imports} == {"wasi_snapshot_preview1"}
    assert {e.name for e in info.exports} >= {"_start", "memory", "run"}
    assert not any(e.name in abi.BY_NAME for e in info.exports)


@pytest.mark.parametrize("batch", [1, 4, 33])
def test_outputs_match_eager(standalone, batch):
    model, wasm = standalone
    x = np.random.default_rng(batch).standard_normal((batch, 12)).astype(np.float32)
    code, stdout, stderr = run_wasi(wasm, npy(x))
    assert code == 0, stderr
    y = np.load(io.BytesIO(stdout))
    assert y.shape == (batch, 5) and y.dtype == np.float32
    ref = model(x)
    assert np.abs(y - ref).max() / np.abs(ref).max() < 1e-5


@pytest.mark.parametrize("payload, message", [
    (b"", "expected a .npy array on stdin for input 'input0'"),
    (b"not an npy file at all", "expected a .npy array on stdin"),
    (npy(np.zeros((2, 12))), "input 'input0' must be float32"),
    (npy(np.zeros((2, 11), np.float32)), r"input 'input0' must have shape \(batch, 12\)"),
    (npy(np.zeros((2, 3, 12), np.float32)), r"must have shape \(batch, 12\)"),
    (npy(np.zeros((40, 12), np.float32)), r"dim 'batch' must be in \[1, 33\]"),
    (npy(np.zeros((3, 12), np.float32))[:-10], "fewer data bytes than its shape needs"),
    (npy(np.zeros((3, 12), np.float32))[:40], "truncated .npy header"),
    (npy(np.asfortranarray(np.zeros((3, 12), np.float32))), "must be in C order"),
])
def test_bad_stdin_is_one_line_on_stderr_and_exit_1(standalone, payload, message):
    _, wasm = standalone
    code, stdout, stderr = run_wasi(wasm, payload)
    assert code == 1 and stdout == b""
    assert stderr.count("\n") == 1
    import re
    assert re.search(message, stderr), stderr


def test_relaxed_variant_is_only_used_when_asked():
    import nn
    np.random.seed(0)
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU()).eval()  # FMA in relaxed
    example = (np.zeros((1, 2, 5, 5), np.float32),)
    relaxed = modelc.export(model, example, standalone=True, isa="relaxed")
    portable = modelc.export(model, example, standalone=True)
    assert b"\xfd\x85\x02" in relaxed  # f32x4.relaxed_madd
    assert b"\xfd\x85\x02" not in portable
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5)).astype(np.float32)
    code, stdout, _ = run_wasi(relaxed, npy(x))
    assert code == 0
    np.testing.assert_allclose(np.load(io.BytesIO(stdout)), model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_node_wasi_gives_the_same_bits(standalone, tmp_path):
    _, wasm = standalone
    path = tmp_path / "model.wasm"
    path.write_bytes(wasm)
    x = np.random.default_rng(7).standard_normal((6, 12)).astype(np.float32)
    node = run_node(path, npy(x))
    _, ours, _ = run_wasi(wasm, npy(x))
    np.testing.assert_array_equal(np.load(io.BytesIO(node)), np.load(io.BytesIO(ours)))


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_transformer_with_two_symbolic_dims_runs_under_node(tmp_path):
    from models import randomize, transformer_encoder
    model = randomize(transformer_encoder())
    path = tmp_path / "encoder.wasm"
    modelc.export(model, (np.zeros((2, 5, 16), np.float32),), path, standalone=True,
                  dynamic={"input0": {0: ("batch", 1, 4), 1: ("seq", 1, 12)}})
    for shape in [(1, 2, 16), (3, 12, 16)]:
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        y, ref = np.load(io.BytesIO(run_node(path, npy(x)))), model(x)
        assert np.abs(y - ref).max() <= 1e-4 * np.abs(ref).max()


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_int8_dynamic_relaxed_export_gives_the_same_bits_under_node(tmp_path):
    """The integer product and dynamic quantization (relaxed kernels: the i16 tile over
    widened operands, SIMD rounding of the quantization) compute the same bits in V8 as in
    wasmtime, and match the quantized graph's eager result. (The relaxed module holds the
    relaxed-dot tile of 7-bit weights too, so Node 20 needs relaxed SIMD on to compile it;
    its V8 behind that flag returns twice the relaxed dot product, so the 7-bit tile is
    checked in Chromium instead: tests/web/test_loader.py.)"""
    import nn
    np.random.seed(3)
    model = nn.Sequential(nn.Linear(37, 24), nn.ReLU(), nn.Linear(24, 9)).eval()
    example = np.zeros((5, 37), np.float32)
    graph = modelc.quantize(model, [example], activations="dynamic")
    wasm = modelc.export(graph, (example,), standalone=True, isa="relaxed")
    assert abi.find("qlinear", "qlinear", ("dequantize",), "uint8").name.encode() in wasm
    path = tmp_path / "model.wasm"
    path.write_bytes(wasm)
    x = np.random.default_rng(8).standard_normal((5, 37)).astype(np.float32) * 3
    node = np.load(io.BytesIO(run_node(path, npy(x), relaxed=True)))
    _, ours, _ = run_wasi(wasm, npy(x))
    np.testing.assert_array_equal(node, np.load(io.BytesIO(ours)))
    (eager,) = modelc.interpret(graph, dict.fromkeys(graph.inputs, x)).values()
    np.testing.assert_allclose(node, eager, rtol=1e-5, atol=1e-5)


def test_integer_and_bool_inputs_and_outputs_go_through_stdin_and_stdout():
    """uint8 pixels and an int16 input in, a bool mask, the int16 sum and an int64 out,
    against onnxruntime; a wrong input dtype is named with numpy's descr."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Cast", ["pixels"], ["wide"], to=TensorProto.INT16),
             helper.make_node("Add", ["wide", "offset"], ["sum"]),
             helper.make_node("Greater", ["sum", "offset"], ["mask"]),
             helper.make_node("Cast", ["sum"], ["long"], to=TensorProto.INT64)]
    graph = helper.make_graph(nodes, "ints", [
        helper.make_tensor_value_info("pixels", TensorProto.UINT8, ["n", 5]),
        helper.make_tensor_value_info("offset", TensorProto.INT16, [5])], [
        helper.make_tensor_value_info(name, dtype, ["n", 5]) for name, dtype in
        (("mask", TensorProto.BOOL), ("sum", TensorProto.INT16), ("long", TensorProto.INT64))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    wasm = modelc.export(modelc.from_onnx(model, dynamic={"pixels": {0: ("n", 1, 8)}}),
                         standalone=True)
    rng = np.random.default_rng(5)
    feeds = {"pixels": rng.integers(0, 256, (3, 5)).astype(np.uint8),
             "offset": np.array([-300, 0, 7, 32767, -32768], np.int16)}
    code, stdout, stderr = run_wasi(wasm, npy(feeds["pixels"]) + npy(feeds["offset"]))
    assert code == 0, stderr
    stream = io.BytesIO(stdout)
    got = [np.load(stream) for _ in range(3)]
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    code, _, stderr = run_wasi(wasm, npy(feeds["pixels"].astype(np.int8)) + npy(feeds["offset"]))
    assert code == 1 and "input 'pixels' must be uint8 ('|u1')" in stderr
