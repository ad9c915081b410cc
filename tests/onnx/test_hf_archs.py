"""Hugging Face ``transformers`` architectures (``tests/cases/hf_archs.py``, tiny and seeded)
as users export them: ``torch.onnx.export`` of the model at opset 17 by the TorchScript
exporter (as optimum does), and by the dynamo exporter (opset 20, onnxscript's patterns).
Each is compiled to wasm with its example shapes fixed and run against onnxruntime within
1e-4 on the relaxed provider; ``WASMNN_SLOW=1`` adds the dynamo exports (seconds each) and
runs every kernel provider."""

from __future__ import annotations

import collections
import functools
import io
import logging
import os
import warnings

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
from modelc.passes import optimize

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
runtime = pytest.importorskip("runtime")
from hf_archs import HF_ARCHS  # noqa: E402  (it imports torch and transformers)

SLOW = bool(os.environ.get("WASMNN_SLOW"))
EXPORTERS = ("torchscript17", "dynamo") if SLOW else ("torchscript17",)
KERNELS = PROVIDERS if SLOW else ("relaxed",)

_VIEW = ("torch's dynamo exporter cannot decompose the attention's view of a transposed "
         "tensor ('Cannot view a tensor with shape ... as a tensor with shape ...')")
REFUSED: dict[tuple[str, str], tuple[type[Exception], str]] = {
    ("swin", "dynamo"): (torch.onnx.OnnxExporterError, _VIEW),
    ("t5_encoder", "dynamo"): (torch.onnx.OnnxExporterError, _VIEW),
}
"""(architecture, exporter) -> the exception it meets today and why (a strict xfail, so a
fix shows)."""


def _inputs(name: str) -> dict[str, np.ndarray]:
    return HF_ARCHS[name].inputs(np.random.default_rng(0))


@functools.cache
def _export(name: str, exporter: str) -> bytes:
    """The model exported with every shape fixed by its example inputs."""
    arch, inputs = HF_ARCHS[name], _inputs(name)
    args = tuple(torch.from_numpy(a) for a in inputs.values())
    names, outputs = list(inputs), list(arch.outputs)
    model = arch.model(tuple(names))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            logging.getLogger("torch.onnx").setLevel(logging.ERROR)
            program = torch.onnx.export(model, args, dynamo=True, input_names=names,
                                        output_names=outputs, verbose=False)
            return program.model_proto.SerializeToString()
        out = io.BytesIO()
        torch.onnx.export(model, args, out, dynamo=False, input_names=names,
                          output_names=outputs, opset_version=17)
        return out.getvalue()


def _cases() -> list:
    cases = []
    for name in sorted(HF_ARCHS):
        for exporter in EXPORTERS:
            refused = REFUSED.get((name, exporter))
            marks = ([pytest.mark.xfail(reason=refused[1], raises=refused[0], strict=True)]
                     if refused else [])
            cases.append(pytest.param(name, exporter, marks=marks, id=f"{name}-{exporter}"))
    return cases


@pytest.mark.parametrize(("name", "exporter"), _cases())
def test_hf_arch_in_wasm_matches_onnxruntime(name, exporter, compare_with_ort):
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    inputs, data = _inputs(name), _export(name, exporter)
    shapes = {k: v.shape for k, v in inputs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # T5's log(0) in the branch not taken
        wasm = modelc.export(modelc.from_onnx(data, input_shapes=shapes))
    for kernels in KERNELS:
        with runtime.load(wasm, kernels=kernels) as session:
            compare_with_ort(session.run(dict(inputs)), data, inputs,
                             f"{name} by {exporter} on {kernels}")


FUSED = ("albert", "bart_encoder", "bert", "clip_text", "clip_vision", "distilbert", "electra",
         "gpt2", "roberta", "segformer", "vit", "wav2vec2", "whisper_encoder", "yolos")
"""The architectures whose attention fuses. Not (yet): LLaMA's and Qwen2's (rotary
embeddings applied after the head permute, grouped-query heads expanded), T5's and Swin's
(a position bias per head, which the kernel's mask does not take), MobileViT's (heads over
unfolded patches)."""


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", FUSED)
def test_attention_fuses(name, exporter):
    """Each of the two layers' attention is one ``head_attention`` node from either exporter
    (transformers' reshape of the heads to their own shape dropped, torch's NaN guard after
    a masked softmax fused or, where no row can be all masked, dropped); the models' numbers
    are checked against onnxruntime above."""
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    shapes = {k: v.shape for k, v in _inputs(name).items()}
    graph = optimize(modelc.from_onnx(_export(name, exporter), input_shapes=shapes))
    ops = collections.Counter(node.op for node in graph.nodes)
    assert ops["head_attention"] == 2 and not ops["softmax"] and not ops["matmul"], ops
