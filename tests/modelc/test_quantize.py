"""``modelc.quantize``: calibration, quantization parameters, the int8 rewrite of linear /
conv / matmul / add / concat with float32 islands between, dynamic quantization, and the
digits classifier's accuracy in int8 (within 0.5 points of float32)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from executors import Lambda

import modelc
import nn
import runtime
from modelc.quantize.observe import MinMax, Percentile, calibrate
from modelc.quantize.params import activation_params, bias_int32, weight_params
from nn import functional as F
from wasm_kernels.wasm import read_module

DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits"


def _run(wasm: bytes, feeds: dict[str, np.ndarray], kernels: str = "simd128") -> np.ndarray:
    with runtime.load(wasm, kernels=kernels) as session:
        return session.run(feeds)["output0"]


def _seeded(model: nn.Module, seed: int = 0, gain: float = 1.0) -> nn.Module:
    rng = np.random.default_rng(seed)
    for _, param in model.named_parameters():
        fan_in = int(np.prod(param.shape[1:])) if param.ndim > 1 else param.shape[0]
        param[...] = (rng.standard_normal(param.shape) * gain / np.sqrt(fan_in)
                      ).astype(np.float32)
    return model.eval()


def test_activation_params_map_the_range_and_zero_exactly() -> None:
    p = activation_params(-1.0, 3.0)
    assert p.scale == pytest.approx(4.0 / 255, rel=1e-7)
    assert p.zero_point == round(-128 + 1.0 / (4.0 / 255))  # -64
    assert p.real(p.zero_point) == 0.0
    assert abs(p.real(-128) + 1.0) <= p.scale / 2 and abs(p.real(127) - 3.0) <= p.scale / 2
    assert activation_params(2.0, 5.0).zero_point == -128  # widened to [0, 5]
    assert activation_params(0.0, 0.0) == activation_params(-0.0, 0.0)
    assert activation_params(0.0, 0.0).scale == 1.0
    with pytest.raises(ValueError, match=r"finite with low <= high, got \[3\.0, 1\.0\]"):
        activation_params(3.0, 1.0)


def test_weight_params_are_symmetric_per_output_channel() -> None:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((5, 3, 2, 2)).astype(np.float32) * np.arange(1, 6)[:, None, None,
                                                                               None]
    w[2] = 0
    q, scale = weight_params(w, "per_channel")
    assert q.dtype == np.int8 and scale.shape == (5,) and scale[2] == 1 and not q[2].any()
    assert (np.abs(q).reshape(5, -1).max(1)[[0, 1, 3, 4]] == 127).all()
    assert np.abs(q.astype(np.float32) * scale[:, None, None, None] - w).max() <= scale.max() / 2
    q1, scale1 = weight_params(w, "per_tensor")
    assert scale1.shape == () and np.abs(q1).max() == 127
    q7, scale7 = weight_params(w, "per_channel_7bit")
    assert (np.abs(q7).reshape(5, -1).max(1)[[0, 1, 3, 4]] == 63).all()
    assert np.abs(q7.astype(np.float32) * scale7[:, None, None, None] - w).max() <= \
        scale7.max() / 2
    np.testing.assert_array_equal(bias_int32(np.array([0.5, -0.25]), 0.1, np.array([0.5, 0.25])),
                                  [10, -10])


def test_observers_track_min_max_and_percentiles() -> None:
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal(1000).astype(np.float32) for _ in range(3)]
    batches[1][7] = 40.0  # one outlier
    whole = np.concatenate(batches)
    minmax, clipped = MinMax(), Percentile(99.0)
    for b in batches:
        minmax.update(b)
        clipped.update(b)
    assert minmax.range() == (float(whole.min()), 40.0)
    np.testing.assert_allclose(clipped.range(), np.percentile(whole, [1, 99]), rtol=1e-6)
    assert MinMax().range() == (0.0, 0.0)


def test_calibrate_records_every_float_tensor() -> None:
    model = Lambda(lambda x: F.relu(x * 2.0) - 1.0)
    graph = modelc.optimize(modelc.trace(model, (np.zeros((2, 3), np.float32),)))
    examples = [np.full((2, 3), v, np.float32) for v in (-1.0, 0.5, 2.0)]
    ranges = calibrate(graph, examples)
    output = graph.outputs["output0"]
    assert ranges[id(output)] == (-1.0, 3.0)
    assert ranges[id(graph.inputs["input0"])] == (-1.0, 2.0)
    with pytest.raises(ValueError, match=r"calibration is empty"):
        calibrate(graph, [])
    with pytest.raises(ValueError, match=r"lacks inputs \['input0'\]"):
        calibrate(graph, [{"x": examples[0]}])
    with pytest.raises(ValueError, match=r"percentile must be in \(50, 100\], got 30"):
        calibrate(graph, examples, percentile=30)


@pytest.fixture(scope="module")
def digits() -> tuple[nn.Module, tuple[np.ndarray, ...]]:
    pytest.importorskip("sklearn")
    sys.path.insert(0, str(DIGITS))
    try:
        from model import load_split, load_trained
    finally:
        sys.path.remove(str(DIGITS))
    return load_trained(), load_split()


BATCH = {"input0": {0: ("batch", 1, 512)}}


def test_digits_int8_accuracy_within_half_a_point_of_float32(digits) -> None:
    model, (x_train, _, x_test, y_test) = digits
    calibration = [x_train[i:i + 32] for i in range(0, 256, 32)]
    graph = modelc.quantize(model, calibration, dynamic=BATCH)
    assert graph.ops() == ["qlinear", "quantize_linear"]
    # ReLUs fused: the three linears become three qlinears, int8 from one to the next, and
    # the last one leaves as float32 (no requantization before the output).
    assert [n.attrs.get("activation", "") for n in graph.nodes if n.op == "qlinear"] == [
        "relu", "relu", ""]
    wasm = modelc.export(graph)
    f32 = (np.asarray(model(x_test)).argmax(1) == y_test).mean()
    for kernels in ("simd128", "host"):
        int8 = (_run(wasm, {"input0": x_test}, kernels).argmax(1) == y_test).mean()
        assert abs(int8 - f32) <= 0.005, (kernels, int8, f32)


def test_digits_7bit_weights_take_the_relaxed_dot_and_keep_the_accuracy(digits) -> None:
    """``weights="per_channel_7bit"``: weights in [-63, 63], so the relaxed kernels take their
    relaxed-dot tile (the packed weights' 7-bit flag set); every kernel provider gives the
    interpreter's bits, within a point of float32's accuracy."""
    model, (x_train, _, x_test, y_test) = digits
    calibration = [x_train[i:i + 32] for i in range(0, 256, 32)]
    graph = modelc.quantize(model, calibration, weights="per_channel_7bit", dynamic=BATCH)
    weights = [n.inputs[3].data for n in graph.nodes if n.op == "qlinear"]
    assert weights and all(np.abs(w).max() == 63 for w in weights)
    wasm = modelc.export(graph)
    x = x_test[:16]
    want = modelc.interpret(graph, {"input0": x})["output0"]
    for kernels in ("relaxed", "simd128", "host"):
        np.testing.assert_array_equal(_run(wasm, {"input0": x}, kernels), want, err_msg=kernels)
    f32 = (np.asarray(model(x_test)).argmax(1) == y_test).mean()
    int8 = (_run(wasm, {"input0": x_test}, "relaxed").argmax(1) == y_test).mean()
    assert abs(int8 - f32) <= 0.01, (int8, f32)


def test_int8_model_is_under_a_third_of_float32() -> None:
    model = _seeded(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512),
                                  nn.ReLU(), nn.Linear(512, 10)))
    x = np.random.default_rng(3).standard_normal((4, 256)).astype(np.float32)
    f32 = modelc.export(model, (x,))
    int8 = modelc.export(modelc.quantize(model, [x]))
    assert len(int8) <= 0.3 * len(f32), (len(int8), len(f32))


def test_int8_convs_run_in_integers_under_a_third_of_float32() -> None:
    """nn.Conv2d quantized: 3x3, 3x3/2 and 1x1 convs import the integer kernels (im2col or
    the 1x1 transpose, then a qlinear row), not f32_conv2d, with int8 weights in the module."""
    model = _seeded(nn.Sequential(nn.Conv2d(16, 64, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(64, 64, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.Conv2d(64, 32, 1)))
    x = np.random.default_rng(5).standard_normal((2, 16, 8, 8)).astype(np.float32)
    f32 = modelc.export(model, (x,))
    int8 = modelc.export(modelc.quantize(model, [x]))
    kernels = {i.name for i in read_module(int8).imports}
    assert {"qu8_im2col", "qu8_transpose"} <= kernels and "f32_conv2d" not in kernels
    assert len(int8) <= 0.3 * len(f32), (len(int8), len(f32))


class Branches(nn.Module):
    """conv-relu, a residual block (conv + add + relu), then a concat with a branch of a
    third of the range: qconv2d, qadd and qconcat."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.body = nn.Conv2d(8, 8, 3, padding=1)
        self.side = nn.Conv2d(3, 4, 1)

    def forward(self, x: np.ndarray) -> np.ndarray:
        a = F.relu(self.stem(x))
        b = F.relu(a + self.body(a))
        return F.concat([b, F.relu(self.side(x)) * 0.2], 1)


def test_convs_residual_adds_and_concats_run_in_integers() -> None:
    model = _seeded(Branches(), gain=2.0)
    rng = np.random.default_rng(4)
    calibration = [rng.standard_normal((2, 3, 8, 8)).astype(np.float32) for _ in range(8)]
    graph = modelc.quantize(model, calibration)
    ops = [n.op for n in graph.nodes]
    assert {"qconv2d", "qadd", "qconcat"} <= set(ops) and "relu" not in ops
    (qadd,) = [n for n in graph.nodes if n.op == "qadd"]
    assert qadd.attrs["low"] == qadd.attrs["zero_point"]  # the ReLU after the add, fused
    (qconcat,) = [n for n in graph.nodes if n.op == "qconcat"]
    # The residual branch covers the output's range: it shares the output's parameters and
    # is copied; the narrower branch is rescaled.
    out = (qconcat.attrs["scale"], qconcat.attrs["zero_point"])
    assert (qconcat.attrs["scales"][0], qconcat.attrs["zero_points"][0]) == out
    assert qconcat.attrs["scales"][1] < qconcat.attrs["scale"]
    wasm, step = modelc.export(graph), qconcat.attrs["scale"]
    seen = calibration[0]  # inside the calibrated ranges: a few steps from float32
    got = _run(wasm, {"input0": seen})
    np.testing.assert_array_equal(got, modelc.interpret(graph, {"input0": seen})["output0"])
    assert np.abs(got - np.asarray(model(seen))).max() <= 4 * step
    unseen = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)  # may clip at the ends
    assert np.abs(_run(wasm, {"input0": unseen}) - np.asarray(model(unseen))).mean() <= step


def test_ops_without_integer_kernels_stay_float_between_dequantize_and_quantize(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _seeded(nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(),
                                  nn.Linear(32, 8), nn.Softmax(-1)))
    rng = np.random.default_rng(5)
    calibration = [rng.standard_normal((4, 16)).astype(np.float32) for _ in range(4)]
    graph = modelc.quantize(model, calibration)
    ops = [n.op for n in graph.nodes]
    # Each qlinear leaves as float32 itself: only float ops read its output.
    assert ops == ["quantize_linear", "qlinear", "layer_norm", "gelu", "quantize_linear",
                   "qlinear", "softmax"]
    assert [n.output.dtype for n in graph.nodes if n.op == "qlinear"] == ["float32"] * 2
    path = tmp_path / "mixed.wasm"
    modelc.export(graph, path=path)
    from runtime.cli import main
    assert main(["inspect", str(path), "--graph"]) == 0
    listing = capsys.readouterr().out
    assert listing.index("qlinear") < listing.index("layer_norm") < listing.index(
        "gelu") < listing.rindex("quantize_linear") < listing.rindex("qlinear")
    x = calibration[0]
    np.testing.assert_allclose(_run(path.read_bytes(), {"input0": x}), model(x), atol=0.03)


def test_dynamic_quantization_needs_no_calibration() -> None:
    model = _seeded(nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)))
    x = np.random.default_rng(6).standard_normal((3, 32)).astype(np.float32)
    graph = modelc.quantize(model, [x], activations="dynamic")
    assert graph.ops() == ["dynamic_quantize_linear", "gelu", "qlinear"]
    got, expected = _run(modelc.export(graph), {"input0": x}), np.asarray(model(x))
    cosine = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(
        expected, axis=1)
    assert cosine.min() >= 0.999


class _Lookup(nn.Module):
    """A token embedding (a wide and a narrow feature column) and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Embedding(50, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, ids: np.ndarray) -> np.ndarray:
        return self.head(self.table(ids))


def test_dynamic_quantization_gathers_an_int8_embedding_table() -> None:
    model = _seeded(_Lookup())
    model.table.weight[:, 0] *= 40.0  # one feature's range must not set the others' scale
    ids = np.random.default_rng(8).integers(0, 50, (2, 6)).astype(np.int64)
    graph = modelc.quantize(model, [ids], activations="dynamic")
    assert graph.ops() == ["dequantize_linear", "dynamic_quantize_linear", "embedding",
                           "qlinear"]
    table = np.asarray(model.table.weight, np.float64)
    scale = np.abs(table).max(axis=0) / 127
    rows = (np.rint(table / scale) * scale)[ids]
    weight = np.asarray(model.head.weight, np.float64)
    expected = rows @ weight.T + np.asarray(model.head.bias)
    got = _run(modelc.export(graph), {"input0": ids})
    np.testing.assert_allclose(got, expected, atol=0.02 * np.abs(expected).max())
    gather = next(node for node in graph.nodes if node.op == "embedding")
    assert [(v.dtype, v.shape) for v in gather.inputs] == [("int64", (2, 6)), ("int8", (50, 8))]


def test_a_graph_quantizes_as_its_module_does() -> None:
    model = _seeded(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
    x = np.random.default_rng(7).standard_normal((5, 8)).astype(np.float32)
    graph = modelc.trace(model, (x,))
    assert str(modelc.quantize(graph, [x])) == str(modelc.quantize(model, [x]))
    dynamic = modelc.quantize(modelc.trace(model, (x,)), [], activations="dynamic")
    assert dynamic.ops() == ["dynamic_quantize_linear", "qlinear"]
    np.testing.assert_allclose(_run(modelc.export(dynamic), {"input0": x}), model(x),
                               atol=0.05)


def test_quantize_errors_name_the_problem() -> None:
    model = nn.Sequential(nn.Linear(4, 2))
    x = np.zeros((1, 4), np.float32)
    with pytest.raises(ValueError, match=r"unknown weights mode 'per_row'; available: "
                                         r"\['per_channel', 'per_tensor', 'per_channel_7bit', "
                                         r"'per_tensor_7bit'\]"):
        modelc.quantize(model, [x], weights="per_row")
    with pytest.raises(ValueError, match=r"unknown activations mode 'int4'"):
        modelc.quantize(model, [x], activations="int4")
    with pytest.raises(ValueError, match=r"calibration is empty"):
        modelc.quantize(model, [])
    with pytest.raises(TypeError, match=r"expected an nn.Module or a Graph to quantize, got 3"):
        modelc.quantize(3, [x])  # type: ignore[arg-type]


def test_cli_exports_int8_and_int8_dynamic(digits, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from runtime.cli import main
    model, (x_train, _, x_test, y_test) = digits
    data = tmp_path / "calibration.npz"
    np.savez(data, input0=x_train[:256].reshape(8, 32, 64))
    source = f"{DIGITS / 'model.py'}:load_trained"
    common = [source, "--input", "input0=32x64", "--dynamic", "input0:0=batch:1:512"]
    static, dynamic = tmp_path / "static.wasm", tmp_path / "dynamic.wasm"
    assert main(["export", *common, "-o", str(static), "--quantize", "int8", "--calibrate",
                 str(data)]) == 0
    assert main(["export", *common, "-o", str(dynamic), "--quantize", "int8-dynamic"]) == 0
    assert main(["inspect", str(static)]) == 0
    assert "ops: qlinear, quantize_linear" in capsys.readouterr().out
    f32 = (np.asarray(model(x_test)).argmax(1) == y_test).mean()
    for path in (static, dynamic):
        accuracy = (_run(path.read_bytes(), {"input0": x_test}).argmax(1) == y_test).mean()
        assert abs(accuracy - f32) <= 0.005, (path.name, accuracy, f32)


@pytest.mark.parametrize("extra, code, message", [
    (["--quantize", "int8"], 7, r"--quantize int8 needs --calibrate DATA\.npz"),
    (["--calibrate", "c.npz"], 7, r"--calibrate and --percentile need --quantize int8"),
    (["--quantize", "int8-dynamic", "--calibrate", "c.npz"], 7,
     r"--calibrate is for --quantize int8; int8-dynamic computes"),
    (["--quantize", "int8", "--calibrate", "missing.npz"], 3,
     r"calibration data '.*missing\.npz' does not exist"),
    (["--quantize", "int8", "--calibrate", "bad.npz"], 7,
     r"the same number of examples along the first axis; found \{'input0': \[\]"),
])
def test_cli_quantize_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             extra: list[str], code: int, message: str) -> None:
    from runtime.cli import main
    np.savez(tmp_path / "bad.npz", input0=np.float32(1))
    extra = [str(tmp_path / e) if e.endswith(".npz") else e for e in extra]
    assert main(["export", f"{DIGITS / 'model.py'}:load_trained", "--input", "input0=1x64",
                 "-o", str(tmp_path / "o.wasm"), *extra]) == code
    assert re.search(message, capsys.readouterr().err)
