"""Quantized ONNX models made by onnxruntime's own quantizers (``quantize_dynamic``,
``quantize_static`` in the QOperator and QDQ formats) against onnxruntime, on the
interpreter and on every kernel provider, within one step of the output's quantization."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
quantization = pytest.importorskip("onnxruntime.quantization")


def _mlp() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


def _convnet() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, stride=2),
        torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))


class _ResidualNet(torch.nn.Module):  # type: ignore[misc]
    """MobileNetV2 and ResNet pieces: a strided stem, an inverted residual block (1x1
    expand, 3x3 depthwise, 1x1 project, skip add), global pooling and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        conv, relu6 = torch.nn.Conv2d, torch.nn.ReLU6
        self.stem = torch.nn.Sequential(conv(3, 8, 3, 2, 1), relu6())
        self.block = torch.nn.Sequential(conv(8, 24, 1), relu6(), conv(24, 24, 3, 1, 1, groups=24),
                                         relu6(), conv(24, 8, 1))
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x: Any) -> Any:
        x = self.stem(x)
        x = x + self.block(x)
        return self.head(x.mean((2, 3)))


class _EncoderLayer(torch.nn.Module):  # type: ignore[misc]
    """A MiniLM-L6 encoder layer: 384 wide, 12 heads, a 1536-wide GELU feed-forward."""

    def __init__(self, width: int = 384, heads: int = 12, hidden: int = 1536):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.up, self.down = torch.nn.Linear(width, hidden), torch.nn.Linear(hidden, width)
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)

    def forward(self, x: Any) -> Any:
        batch, steps, width = x.shape
        q, k, v = (t.reshape(batch, steps, self.heads, -1).transpose(1, 2)  # (B, nh, T, hs)
                   for t in self.qkv(x).split(width, -1))
        scores = q @ k.transpose(-1, -2) / (width // self.heads) ** 0.5
        context = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(batch, steps, width)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.down(torch.nn.functional.gelu(self.up(x))))


class _Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]
    def __init__(self, shape: tuple[int, ...]):
        self.feeds = iter([{"x": _input(shape, seed)} for seed in range(8)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.feeds, None)


def _input(shape: tuple[int, ...], seed: int = 100) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _quantized(tmp_path: Path, torch_to_onnx: Callable[..., bytes], module: Any,
               shape: tuple[int, ...], how: str) -> bytes:
    """``module`` exported to ONNX and quantized by onnxruntime: ``dynamic``,
    ``dynamic_reduced`` (7-bit weights), ``qoperator`` or ``qdq`` (static, per channel)."""
    source, target = tmp_path / "f32.onnx", tmp_path / f"{how}.onnx"
    source.write_bytes(torch_to_onnx(module, (torch.from_numpy(_input(shape)),), ["x"], ["y"]))
    if how.startswith("dynamic"):
        quantization.quantize_dynamic(source, target, weight_type=quantization.QuantType.QInt8,
                                      reduce_range=how == "dynamic_reduced")
    else:
        form = {"qoperator": quantization.QuantFormat.QOperator,
                "qdq": quantization.QuantFormat.QDQ}[how]
        quantization.quantize_static(source, target, _Calibration(shape), quant_format=form,
                                     per_channel=True)
    return target.read_bytes()


def ort_run(model: bytes, feeds: dict[str, np.ndarray], literal: bool = False
            ) -> dict[str, np.ndarray]:
    """onnxruntime's outputs; ``literal`` runs the graph as written (no graph
    optimizations: a QDQ model then runs each node as the ONNX standard defines it)."""
    options = ort.SessionOptions()
    if literal:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def _output_step(model: bytes) -> float:
    """The scale of the final DequantizeLinear (one step of the output), or 0 when the
    output is float32 computed from an int32 accumulator (it must then match closely)."""
    proto = onnx.load_from_string(model)
    last = [n for n in proto.graph.node if n.op_type == "DequantizeLinear"
            and n.output[0] == proto.graph.output[0].name]
    if not last:
        return 0.0
    scales = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    return float(scales[last[0].input[1]])


def _check(model: bytes, x: np.ndarray, literal: bool = False) -> bytes:
    """Interpreter and every provider within one output step (or 1e-5 relative) of ort;
    returns the compiled module."""
    want = ort_run(model, {"x": x}, literal)["y"]
    tolerance = max(_output_step(model), 1e-5 * float(np.abs(want).max())) * 1.001
    results = {"interpreter": modelc.interpret(modelc.optimize(modelc.from_onnx(model)),
                                               {"x": x})["y"]}
    wasm = modelc.export(modelc.from_onnx(model))
    runtime = pytest.importorskip("runtime")
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            results[kernels] = session.run({"x": x})["y"]
    for name, got in results.items():
        error = float(np.abs(got - want).max())
        assert error <= tolerance, f"{name}: max error {error:.3g}, one step {tolerance:.3g}"
    return wasm


@pytest.mark.parametrize("how", ["dynamic_reduced", "qoperator", "qdq"])
def test_mlp_matches_onnxruntime(tmp_path, torch_to_onnx, how) -> None:  # type: ignore[no-untyped-def]
    """QDQ against the graph as written (see the convnet's test): onnxruntime's fused QDQ
    Gemm is 3 output steps from its own unoptimized run on this MLP."""
    _check(_quantized(tmp_path, torch_to_onnx, _mlp(), (2, 16), how), _input((2, 16)),
           literal=how == "qdq")


def _kernels(wasm: bytes) -> set[str]:
    """The kernels a compiled module imports."""
    from wasm_kernels.wasm import read_module

    return {i.name for i in read_module(wasm).imports}


@pytest.mark.parametrize("how", ["dynamic_reduced", "qoperator", "qdq"])
def test_convnet_matches_onnxruntime(tmp_path, torch_to_onnx, how) -> None:  # type: ignore[no-untyped-def]
    """ConvInteger (dynamic), QLinearConv (QOperator) and QDQ-folded convs run in the
    integer kernels. QDQ against the graph as written, each node as the ONNX standard
    defines it: onnxruntime's optimized run of this net is 3 output steps from its own
    unoptimized one (its fused integer kernels round differently)."""
    wasm = _check(_quantized(tmp_path, torch_to_onnx, _convnet(), (1, 3, 12, 12), how),
                  _input((1, 3, 12, 12)), literal=how == "qdq")
    kernels = _kernels(wasm)
    assert "qu8_im2col" in kernels and "f32_conv2d" not in kernels, sorted(kernels)
    assert any("8_qlinear_" in name for name in kernels), sorted(kernels)


def test_minilm_sized_layer_matches_onnxruntime(tmp_path, torch_to_onnx) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = _quantized(tmp_path, torch_to_onnx, _EncoderLayer().eval(), (1, 16, 384),
                       "dynamic_reduced")
    ops = {node.op for node in modelc.optimize(modelc.from_onnx(model)).nodes}
    assert {"dynamic_quantize_linear", "qlinear"} <= ops
    _check(model, _input((1, 16, 384)))


def test_qdq_products_fold_into_quantized_operators(tmp_path, torch_to_onnx) -> None:  # type: ignore[no-untyped-def]
    model = _quantized(tmp_path, torch_to_onnx, _convnet(), (1, 3, 12, 12), "qdq")
    graph = modelc.optimize(modelc.from_onnx(model))
    ops = [node.op for node in graph.nodes]
    assert ops.count("qconv2d") == 2 and ops.count("qlinear") == 1
    assert "conv2d" not in ops and "linear" not in ops


@pytest.mark.parametrize("how", ["qoperator", "qdq"])
def test_residual_depthwise_net_matches_onnxruntime(tmp_path, torch_to_onnx, how) -> None:  # type: ignore[no-untyped-def]
    """Its depthwise qconv2d runs the depthwise family's quantized row (int8 in and out)."""
    torch.manual_seed(0)
    wasm = _check(_quantized(tmp_path, torch_to_onnx, _ResidualNet().eval(), (1, 3, 16, 16),
                             how), _input((1, 3, 16, 16)), literal=how == "qdq")
    kernels = _kernels(wasm)
    assert "qs8_depthwise_conv2d" in kernels and "f32_conv2d" not in kernels, sorted(kernels)


def test_full_range_dynamic_follows_the_onnx_specification(tmp_path, torch_to_onnx) -> None:  # type: ignore[no-untyped-def]
    """With full-range int8 weights onnxruntime's x86 u8s8 kernel (pmaddubsw, no VNNI) may
    saturate 16-bit pair sums, so it is not the reference there; onnx's own evaluator is,
    and the int32 products here are exact."""
    reference = pytest.importorskip("onnx.reference")
    model = _quantized(tmp_path, torch_to_onnx, _mlp(), (2, 16), "dynamic")
    x = _input((2, 16))
    want = reference.ReferenceEvaluator(onnx.load_from_string(model)).run(None, {"x": x})[0]
    runtime = pytest.importorskip("runtime")
    with runtime.load(modelc.export(modelc.from_onnx(model)), kernels="simd128") as session:
        got = session.run({"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _single_node(op: str, inputs: dict[str, np.ndarray], domain: str = "", **attrs: Any
                 ) -> bytes:
    """A model of one node: the first input a run-time uint8 tensor, the rest initializers."""
    from onnx import TensorProto, helper, numpy_helper

    names = list(inputs)
    node = helper.make_node(op, names, ["y"], domain=domain, **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(names[0], TensorProto.UINT8,
                                                    list(inputs[names[0]].shape))],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in list(inputs.items())[1:]])
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def _pair(prefix: str, zero_dtype: Any = np.uint8) -> dict[str, np.ndarray]:
    return {f"{prefix}_scale": np.array(0.1, np.float32),
            f"{prefix}_zero": np.array(0, zero_dtype)}


@pytest.mark.parametrize("op, extra, domain, attrs, message", [
    ("QLinearConv", {"w": np.ones((2, 1, 3, 3), np.int8), **_pair("w", np.int8), **_pair("y")},
     "", {"pads": [0, 0, 1, 1]}, r"uneven pads \[\(0, 1\), \(0, 1\)\] are not supported"),
    ("QGemm", {"b": np.ones((4, 3), np.int8), **_pair("b", np.int8)}, "com.microsoft",
     {"alpha": 2.0}, "QGemm with alpha != 1 or transA is not supported"),
])
def test_unsupported_forms_are_named(op, extra, domain, attrs, message) -> None:  # type: ignore[no-untyped-def]
    shape = (1, 1, 5, 5) if op == "QLinearConv" else (2, 4)
    model = _single_node(op, {"x": np.zeros(shape, np.uint8), **_pair("x"), **extra},
                         domain, **attrs)
    with pytest.raises(modelc.CompileError, match=message):
        modelc.from_onnx(model)


def _graph(nodes: list[Any], inputs: dict[str, np.ndarray], initializers: dict[str, np.ndarray],
           output_type: int) -> bytes:
    from onnx import helper, numpy_helper

    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                                   list(v.shape)) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", output_type, None)],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid("com.microsoft", 1)]
                             ).SerializeToString()


def _compare_uint8(model: bytes, feeds: dict[str, np.ndarray]) -> None:
    """Every provider's uint8 output within one step of onnxruntime's."""
    want = ort_run(model, feeds)["y"].astype(np.int32)
    runtime = pytest.importorskip("runtime")
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            got = session.run(feeds)["y"].astype(np.int32)
        assert np.abs(got - want).max() <= 1, kernels


def test_qlinear_concat_and_matmul_of_two_activations() -> None:
    """com.microsoft QLinearConcat of two activations with their own scales, then
    QLinearMatMul of the result with another activation (attention's shape of product)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(4)
    feeds = {"a": rng.standard_normal((2, 3, 4)).astype(np.float32),
             "b": rng.standard_normal((2, 3, 4)).astype(np.float32),
             "c": rng.standard_normal((2, 8, 5)).astype(np.float32)}
    pairs = {f"{name}_{part}": np.array(value, dtype) for name, scale, zero in
             (("a", 0.02, 120), ("b", 0.05, 128), ("c", 0.03, 100), ("k", 0.04, 125),
              ("y", 0.2, 130))
             for part, value, dtype in (("s", scale, np.float32), ("z", zero, np.uint8))}
    nodes = [helper.make_node("QuantizeLinear", [n, f"{n}_s", f"{n}_z"], [f"{n}q"])
             for n in "abc"]
    nodes.append(helper.make_node("QLinearConcat", ["k_s", "k_z", "aq", "a_s", "a_z", "bq",
                                                    "b_s", "b_z"], ["k"],
                                  domain="com.microsoft", axis=2))
    nodes.append(helper.make_node("QLinearMatMul", ["k", "k_s", "k_z", "cq", "c_s", "c_z",
                                                    "y_s", "y_z"], ["y"]))
    _compare_uint8(_graph(nodes, feeds, pairs, TensorProto.UINT8), feeds)


def test_an_int32_bias_computed_at_run_time_adds_to_an_integer_product(close) -> None:
    """Older ``quantize_dynamic`` exports (ddddocr's): the float bias quantized at run time
    with the input's dynamic scale (``Cast(Floor(bias / (x_scale * w_scale)))``, int32) and
    added to ``MatMulInteger``'s int32 accumulator, then cast and scaled."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((3, 16)).astype(np.float32)}
    weights = {"w": rng.integers(-127, 128, (16, 8)).astype(np.int8),
               "w_z": np.array(0, np.int8), "w_s": np.array(0.01, np.float32),
               "bias": rng.uniform(-1, 1, 8).astype(np.float32)}
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "x_s", "x_z"]),
             helper.make_node("MatMulInteger", ["xq", "w", "x_z", "w_z"], ["acc"]),
             helper.make_node("Mul", ["x_s", "w_s"], ["scale"]),
             helper.make_node("Div", ["bias", "scale"], ["bias_steps"]),
             helper.make_node("Floor", ["bias_steps"], ["bias_floor"]),
             helper.make_node("Cast", ["bias_floor"], ["bias_q"], to=TensorProto.INT32),
             helper.make_node("Add", ["acc", "bias_q"], ["biased"]),
             helper.make_node("Cast", ["biased"], ["real"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["real", "scale"], ["y"])]
    model = _graph(nodes, feeds, weights, TensorProto.FLOAT)
    want = ort_run(model, feeds)["y"]
    runtime = pytest.importorskip("runtime")
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            close(session.run(feeds)["y"], want, kernels)
