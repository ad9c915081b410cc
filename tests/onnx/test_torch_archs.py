"""Today's architectures (``tests/cases/torch_archs.py``) as torch 2.13 exports them: by the
default dynamo exporter (``torch.onnx.export(..., dynamo=True)``, which needs onnxscript; its
graphs are opset 20 with LayerNormalization, Gelu and its own shape and mask patterns) and by
the TorchScript one at opset 17, compiled to wasm and run on every kernel provider against
onnxruntime within 1e-4."""

from __future__ import annotations

import io
import logging
import warnings

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

torch = pytest.importorskip("torch")
runtime = pytest.importorskip("runtime")
from torch_archs import ARCHS, Arch  # noqa: E402  (it imports torch)

EXPORTERS = ("dynamo", "torchscript17")

REFUSED: dict[tuple[str, str], str] = {}
"""(architecture, exporter) -> the refusal it meets today (a strict xfail, so a fix shows)."""


def _export(arch: Arch, exporter: str, inputs: dict[str, np.ndarray]) -> bytes:
    args = tuple(torch.from_numpy(a) for a in inputs.values())
    names, outputs = list(inputs), list(arch.outputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            pytest.importorskip("onnxscript")
            logging.getLogger("torch.onnx").setLevel(logging.ERROR)
            shapes = {name: {axis: torch.export.Dim.DYNAMIC for axis in axes}
                      for name, axes in arch.dynamic.items()} or None
            program = torch.onnx.export(arch.model(), args, dynamo=True, input_names=names,
                                        output_names=outputs, dynamic_shapes=shapes,
                                        verbose=False)
            return program.model_proto.SerializeToString()
        out = io.BytesIO()
        torch.onnx.export(arch.model(), args, out, dynamo=False, input_names=names,
                          output_names=outputs, dynamic_axes=arch.dynamic, opset_version=17)
        return out.getvalue()


def _cases() -> list:
    cases = []
    for name in sorted(ARCHS):
        for exporter in EXPORTERS:
            reason = REFUSED.get((name, exporter))
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            cases.append(pytest.param(name, exporter, marks=marks, id=f"{name}-{exporter}"))
    return cases


@pytest.mark.parametrize(("name", "exporter"), _cases())
def test_arch_in_wasm_matches_onnxruntime(name, exporter, compare_with_ort):
    arch = ARCHS[name]
    inputs = arch.inputs(np.random.default_rng(0))
    data = _export(arch, exporter, inputs)
    shapes = {k: inputs[k].shape for k in arch.dynamic}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # T5's log(0) in the branch not taken
        wasm = modelc.export(modelc.from_onnx(data, input_shapes=shapes))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            got = session.run(dict(inputs))
        compare_with_ort(got, data, inputs, f"{name} by {exporter} on {kernels}")
