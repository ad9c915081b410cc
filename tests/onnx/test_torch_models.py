"""ONNX models exported from torch in the test (ResNet-style and MobileNetV2-style CNNs, a
BERT-style encoder with an attention mask), imported and compared with onnxruntime."""

from __future__ import annotations

import math

import numpy as np
import pytest

import modelc

torch = pytest.importorskip("torch")
tnn = torch.nn


class BasicBlock(tnn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(cout)
        self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(cout)
        self.down = (tnn.Sequential(tnn.Conv2d(cin, cout, 1, stride, bias=False),
                                    tnn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else tnn.Identity())

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.down(x))


class ResNet(tnn.Module):
    def __init__(self):
        super().__init__()
        self.stem = tnn.Sequential(tnn.Conv2d(3, 8, 3, 1, 1), tnn.BatchNorm2d(8), tnn.ReLU(),
                                   tnn.MaxPool2d(3, 2, 1))
        self.layers = tnn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 16, 2))
        self.fc = tnn.Linear(16, 10)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(tnn.functional.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(tnn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.use_residual = stride == 1 and cin == cout
        self.block = tnn.Sequential(
            tnn.Conv2d(cin, hidden, 1, bias=False), tnn.BatchNorm2d(hidden), tnn.ReLU6(),
            tnn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),  # depthwise
            tnn.BatchNorm2d(hidden), tnn.ReLU6(),
            tnn.Conv2d(hidden, cout, 1, bias=False), tnn.BatchNorm2d(cout))

    def forward(self, x):
        return x + self.block(x) if self.use_residual else self.block(x)


class MobileNetV2(tnn.Module):
    def __init__(self):
        super().__init__()
        self.features = tnn.Sequential(
            tnn.Conv2d(3, 8, 3, 2, 1, bias=False), tnn.BatchNorm2d(8), tnn.ReLU6(),
            InvertedResidual(8, 8, 1, 1), InvertedResidual(8, 12, 2, 4),
            InvertedResidual(12, 12, 1, 4))
        self.classifier = tnn.Sequential(tnn.Dropout(0.2), tnn.Linear(12, 5))

    def forward(self, x):
        x = self.features(x).mean((2, 3))
        return self.classifier(x)


class EncoderLayer(tnn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = tnn.Linear(d, 3 * d), tnn.Linear(d, d)
        self.ln1, self.ln2 = tnn.LayerNorm(d), tnn.LayerNorm(d)
        self.ff = tnn.Sequential(tnn.Linear(d, 4 * d), tnn.GELU(), tnn.Linear(4 * d, d))

    def forward(self, x, mask_bias):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in (q, k, v))  # (B, nh, T, hs)
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads) + mask_bias
        y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = self.ln1(x + self.out(y))
        return self.ln2(x + self.ff(x))


class Bert(tnn.Module):
    def __init__(self, vocab: int = 50, d: int = 32, heads: int = 4, layers: int = 2,
                 max_len: int = 16):
        super().__init__()
        self.tokens, self.positions = tnn.Embedding(vocab, d), tnn.Embedding(max_len, d)
        self.types = tnn.Embedding(2, d)
        self.ln = tnn.LayerNorm(d)
        self.layers = tnn.ModuleList(EncoderLayer(d, heads) for _ in range(layers))
        self.pooler = tnn.Linear(d, d)

    def forward(self, input_ids, attention_mask):
        t = input_ids.shape[1]
        x = self.tokens(input_ids) + self.positions.weight[:t] + self.types.weight[0]
        x = self.ln(x)
        mask_bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x, torch.tanh(self.pooler(x[:, 0]))


def _randomize_batchnorms(model: tnn.Module) -> tnn.Module:
    torch.manual_seed(0)
    for module in model.modules():
        if isinstance(module, tnn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)
    return model.eval()


def _images(*shapes: tuple[int, ...]) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [{"x": rng.standard_normal(s).astype(np.float32)} for s in shapes]


CNNS = {"resnet": ResNet, "mobilenet_v2": MobileNetV2}


@pytest.mark.parametrize("opset", [9, 13, 17])
@pytest.mark.parametrize("name", sorted(CNNS))
def test_cnn_with_symbolic_batch(name, opset, torch_to_onnx, check_against_ort):
    torch.manual_seed(0)
    model = _randomize_batchnorms(CNNS[name]())
    data = torch_to_onnx(model, (torch.randn(1, 3, 16, 16),), ["x"], ["y"],
                         {"x": {0: "batch"}}, opset=opset)
    graph = check_against_ort(data, _images((1, 3, 16, 16), (3, 3, 16, 16)))
    assert graph.inputs["x"].shape == ("batch", 3, 16, 16)
    assert graph.dims["batch"] == modelc.onnx.DEFAULT_DIM_RANGE


@pytest.mark.parametrize("name", sorted(CNNS))
def test_cnn_keeps_batch_normalization_nodes(name, torch_to_onnx, check_against_ort):
    model = _randomize_batchnorms(CNNS[name]())
    data = torch_to_onnx(model, (torch.randn(2, 3, 16, 16),), ["x"], ["y"],
                         training=torch.onnx.TrainingMode.PRESERVE,
                         do_constant_folding=False)
    onnx = pytest.importorskip("onnx")
    assert "BatchNormalization" in {n.op_type for n in onnx.load_from_string(data).graph.node}
    graph = check_against_ort(data, _images((2, 3, 16, 16)))
    assert "batch_norm" not in graph.ops()  # folded into the convolutions


def _bert_inputs(batch: int, seq: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - 3:] = rng.integers(0, 2, (batch, 3))  # padded tails
    return {"input_ids": rng.integers(0, 50, (batch, seq)), "attention_mask": mask}


def _export_bert(torch_to_onnx, opset: int, dynamic_axes: dict) -> bytes:
    torch.manual_seed(0)
    example = _bert_inputs(2, 8)
    return torch_to_onnx(Bert(), tuple(torch.from_numpy(a) for a in example.values()),
                         ["input_ids", "attention_mask"], ["hidden", "pooled"],
                         dynamic_axes, opset=opset)


@pytest.mark.parametrize("opset", [14, 17])
def test_bert_with_symbolic_batch(opset, torch_to_onnx, check_against_ort):
    data = _export_bert(torch_to_onnx, opset, {"input_ids": {0: "batch"},
                                               "attention_mask": {0: "batch"}})
    graph = check_against_ort(data, [_bert_inputs(1, 8, 1), _bert_inputs(3, 8, 2)],
                              dynamic={"input_ids": {0: ("batch", 1, 4)}})
    assert graph.dims == {"batch": (1, 4)}
    assert "embedding" in graph.ops() and "softmax" in graph.ops()


def test_bert_with_symbolic_sequence_fixed_by_input_shapes(torch_to_onnx, check_against_ort):
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    data = _export_bert(torch_to_onnx, 17, axes)
    shapes = {"input_ids": (2, 12), "attention_mask": (2, 12)}
    graph = check_against_ort(data, [_bert_inputs(2, 12)], input_shapes=shapes)
    assert graph.dims == {}


def test_bert_with_symbolic_sequence(torch_to_onnx, check_against_ort, compare_with_ort):
    """Its position ids, a buffer sliced up to the sequence, are taken at run time; one
    graph, and one wasm module, run at three lengths."""
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    data = _export_bert(torch_to_onnx, 17, axes)
    dims = {0: ("batch", 1, 4), 1: ("seq", 4, 16)}
    dynamic = {"input_ids": dims, "attention_mask": dims}
    runs = [_bert_inputs(2, 12), _bert_inputs(1, 4, 1), _bert_inputs(3, 16, 2)]
    graph = check_against_ort(data, runs, dynamic=dynamic)
    assert graph.dims == {"batch": (1, 4), "seq": (4, 16)}
    runtime = pytest.importorskip("runtime")
    with runtime.load(modelc.export(modelc.from_onnx(data, dynamic=dynamic))) as session:
        for inputs in runs:
            compare_with_ort(session.run(inputs), data, inputs,
                             f"BERT at {inputs['input_ids'].shape}")


def _check_wasm(data: bytes, inputs: dict[str, np.ndarray], **kwargs) -> None:
    """The exported module under wasmtime matches the interpreter (skip without lowering)."""
    runtime = pytest.importorskip("runtime")
    try:
        wasm = modelc.export(modelc.from_onnx(data, **kwargs))
    except modelc.CompileError as err:
        pytest.skip(f"no wasm lowering yet: {err}")
    want = modelc.interpret(modelc.from_onnx(data, **kwargs), inputs)
    with runtime.load(wasm) as session:
        got = session.run(inputs)
    for name, ref in want.items():
        assert np.abs(got[name] - ref).max() <= 1e-4 * np.abs(ref).max()


@pytest.mark.parametrize("name", sorted(CNNS))
def test_cnn_runs_in_wasm(name, torch_to_onnx):
    model = _randomize_batchnorms(CNNS[name]())
    data = torch_to_onnx(model, (torch.randn(1, 3, 16, 16),), ["x"], ["y"])
    _check_wasm(data, _images((1, 3, 16, 16))[0])


def test_bert_runs_in_wasm(torch_to_onnx):
    data = _export_bert(torch_to_onnx, 17, {"input_ids": {0: "batch"},
                                            "attention_mask": {0: "batch"}})
    _check_wasm(data, _bert_inputs(3, 8), dynamic={"input_ids": {0: ("batch", 1, 4)}})
