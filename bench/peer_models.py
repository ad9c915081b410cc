"""The models ``peers.py`` measures (MiniLM, the CNNs, the MLP, the LSTM, their int8 versions
and the real models of ``peers_real.py``), their inputs, and the artifacts every runtime runs:
``prepare`` writes the inputs, torch's reference output, the ONNX export (quantized for the
int8 rows) and wasmnn's two ``.wasm`` files into a folder.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import peers_real

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "minilm"))


@dataclass
class ModelSpec:
    kind: str  # "minilm", or a builder in bench/models.py
    inputs: Callable[[], dict[str, np.ndarray]]
    quantize: str = ""
    """"dynamic", "dynamic-7bit" or "static": the ONNX model every runtime runs is
    onnxruntime's quantize_dynamic (7-bit: ``reduce_range``, weights in [-64, 64], what it
    advises for x86 without VNNI) / quantize_static (QDQ, per channel, 32 calibration inputs)
    of the f32 one; wasmnn imports it (the nn-path column is left out)."""


def _minilm_inputs(batch: int, length: int) -> Callable[[], dict[str, np.ndarray]]:
    def make() -> dict[str, np.ndarray]:
        rng = np.random.default_rng(0)
        ids = rng.integers(1000, 30000, (batch, length), dtype=np.int64)
        ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
        return {"input_ids": ids, "attention_mask": np.ones((batch, length), np.int64)}
    return make


def _image(shape: tuple[int, ...], name: str = "x") -> Callable[[], dict[str, np.ndarray]]:
    return lambda: {name: np.random.default_rng(0).standard_normal(shape, np.float32)}


MODELS = {
    "minilm-b1": ModelSpec("minilm", _minilm_inputs(1, 128)),
    "minilm-b8": ModelSpec("minilm", _minilm_inputs(8, 128)),
    "resnet18": ModelSpec("resnet18", _image((1, 3, 224, 224))),
    "mobilenet_v2": ModelSpec("mobilenet_v2", _image((1, 3, 224, 224))),
    "mlp": ModelSpec("mlp", _image((32, 784))),
    "lstm": ModelSpec("lstm", _image((100, 1, 64))),
    "minilm-b1-int8": ModelSpec("minilm", _minilm_inputs(1, 128), "dynamic"),
    "minilm-b1-int8-7bit": ModelSpec("minilm", _minilm_inputs(1, 128), "dynamic-7bit"),
    "resnet18-int8": ModelSpec("resnet18", _image((1, 3, 224, 224)), "static"),
    "mobilenet_v2-int8": ModelSpec("mobilenet_v2", _image((1, 3, 224, 224)), "static"),
    "mlp-int8": ModelSpec("mlp", _image((32, 784)), "dynamic"),
}
DEFAULT_MODELS = list(MODELS)
MODELS.update({name: ModelSpec("real", peers_real.inputs(name)) for name in peers_real.NAMES})
GROUPS = {"real": peers_real.NAMES}
TITLES = {"minilm-b1": "MiniLM b1 s128", "minilm-b8": "MiniLM b8 s128",
          "resnet18": "ResNet-18 1x3x224²", "mobilenet_v2": "MobileNetV2 1x3x224²",
          "mlp": "MLP 32x784", "lstm": "LSTM h128 T100 B1",
          "minilm-b1-int8": "MiniLM b1 s128 int8", "resnet18-int8": "ResNet-18 int8",
          "minilm-b1-int8-7bit": "MiniLM int8 7-bit",
          "mobilenet_v2-int8": "MobileNetV2 int8", "mlp-int8": "MLP 32x784 int8",
          **{n: n for n in peers_real.NAMES}}


# ---------------------------------------------------------------- torch models


def torch_model(kind: str, workdir: Path | None = None, *, for_export: bool = False) -> Any:
    """The torch model of ``kind``: MiniLM from the checkpoint, else bench/models.py with the
    weights saved in ``workdir`` (or fresh seeded ones when there are none yet)."""
    import torch

    if kind == "minilm":
        return torch_minilm(for_export=for_export)
    import models

    torch.manual_seed(0)
    model = getattr(models, kind)(torch.nn).eval()
    models.randomize_batchnorm(model)
    if workdir is not None and (workdir / "torch.pt").exists():
        model.load_state_dict(torch.load(workdir / "torch.pt"))
    return model


def torch_minilm(*, for_export: bool = False) -> Any:
    """transformers' BertModel on the checkpoint, then mean pooling and L2 normalisation
    (sentence-transformers' Pooling + Normalize), written in torch.

    ``for_export`` only switches attention to transformers' eager implementation (its sdpa
    path exports an ``IsNaN`` guard): the mask code, token types and normalisation export as
    transformers writes them, and every ONNX runtime here, wasmnn's included, runs that
    plain export. torch itself runs its fastest path (sdpa).
    """
    import torch
    import transformers
    from sentence_encoder import find_minilm

    os.environ["HF_HUB_OFFLINE"] = "1"
    transformers.logging.set_verbosity_error()  # the checkpoint's unused pooler is expected
    transformers.logging.disable_progress_bar()
    bert = transformers.BertModel.from_pretrained(
        find_minilm(), add_pooling_layer=False,
        attn_implementation="eager" if for_export else "sdpa")

    class TorchSentenceEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            keep = attention_mask.unsqueeze(-1).float()  # (B, T, 1)
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            mean = (hidden.last_hidden_state * keep).sum(1) / keep.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    return TorchSentenceEncoder().eval()


def nn_model(kind: str, reference: Any) -> Any:
    """The ``nn`` twin of ``reference`` with the same weights."""
    import nn

    if kind == "minilm":
        from sentence_encoder import SentenceEncoder, find_minilm
        return SentenceEncoder.from_pretrained(find_minilm())
    import models

    return models.transfer(reference, getattr(models, kind)(nn))


# ---------------------------------------------------------------- preparation (parent)


def _first_line(error: BaseException) -> str:
    """The gist of ``error`` in one short line (a CompileError's: what has no lowering)."""
    text = f"{type(error).__name__}: {error}"
    tail = text.rsplit(": op '", 1)
    if len(tail) == 2:  # "... traced from <line>: op 'x' has no WebAssembly lowering yet; ..."
        return f"{type(error).__name__}: op '{tail[1].split(';')[0]}"
    return text.splitlines()[0][:160]


def prepare(name: str, workdir: Path) -> dict[str, Any]:
    """Write the inputs, the reference output, torch weights, ``model.onnx`` and
    ``model.wasm`` (nn path) and ``model-onnx.wasm`` (ONNX path) into ``workdir``; return
    what failed, by artifact."""
    import torch

    import modelc

    spec = MODELS[name]
    workdir.mkdir(parents=True, exist_ok=True)
    inputs = spec.inputs()
    arrays: dict[str, Any] = inputs  # numpy's stubs read ndarray-typed keywords as its flags
    np.savez(workdir / "inputs.npz", **arrays)
    for key, value in inputs.items():
        value.tofile(workdir / f"{key}.bin")
    if spec.kind == "real":
        return peers_real.prepare(name, workdir, inputs)
    reference = torch_model(spec.kind)
    if spec.kind != "minilm":
        torch.save(reference.state_dict(), workdir / "torch.pt")
    with torch.no_grad():
        expected = reference(*(torch.from_numpy(v) for v in inputs.values())).numpy()
    np.save(workdir / "expected.npy", expected)
    failed: dict[str, str] = {}
    try:
        if spec.quantize:
            raise NotImplementedError("int8 runs the onnxruntime-quantized ONNX model")
        modelc.export(nn_model(spec.kind, reference), inputs, workdir / "model.wasm")
    except Exception as error:  # noqa: BLE001 - reported in the table
        failed["wasmnn"] = _first_line(error)
    try:
        exportable = torch_model(spec.kind, workdir, for_export=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(exportable, tuple(torch.from_numpy(v) for v in inputs.values()),
                              str(workdir / "model.onnx"), input_names=list(inputs),
                              output_names=["output0"], opset_version=17, dynamo=False)
        if spec.quantize:
            quantize_onnx(workdir / "model.onnx", spec)
    except Exception as error:  # noqa: BLE001
        failed["ort"] = failed["ortweb"] = failed["wasmnn-onnx"] = _first_line(error)
        return failed
    try:
        graph = modelc.from_onnx(str(workdir / "model.onnx"),
                                 input_shapes={k: v.shape for k, v in inputs.items()})
        modelc.export(graph, None, workdir / "model-onnx.wasm")
    except Exception as error:  # noqa: BLE001
        failed["wasmnn-onnx"] = _first_line(error)
    return failed


def quantize_onnx(path: Path, spec: ModelSpec) -> None:
    """Replace the f32 ONNX model at ``path`` by onnxruntime's int8 quantization of it."""
    from onnxruntime import quantization

    source = path.with_name("model-f32.onnx")
    path.rename(source)
    if spec.quantize.startswith("dynamic"):
        quantization.quantize_dynamic(source, path, weight_type=quantization.QuantType.QInt8,
                                      reduce_range=spec.quantize == "dynamic-7bit")
        return

    class Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            base = spec.inputs()
            self.feeds = iter([{key: np.random.default_rng(seed).standard_normal(
                value.shape).astype(value.dtype) for key, value in base.items()}
                for seed in range(32)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.feeds, None)

    quantization.quantize_static(source, path, Calibration(), per_channel=True)
