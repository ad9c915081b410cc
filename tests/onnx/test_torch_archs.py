"""Today's architectures (``tests/cases/torch_archs.py``) as torch 2.13 exports them: by the
default dynamo exporter (``torch.onnx.export(..., dynamo=True)``, which needs onnxscript; its
graphs are opset 20 with LayerNormalization, Gelu and its own shape and mask patterns) and by
the TorchScript one at opset 17, both with a symbolic batch as users export them. Each is
compiled to wasm twice, with its shapes fixed by ``input_shapes`` and with the batch kept
symbolic, and run on every kernel provider against onnxruntime within 1e-4. The text models
are also exported and compiled with a symbolic sequence as well (``dynamic_axes`` naming the
token axis, as users export them), one module run at three sequence lengths: their positions
(``Range`` up to the sequence), T5's relative position buckets, LLaMA's rotary angles and
the causal masks are computed at run time."""

from __future__ import annotations

import collections
import functools
import io
import logging
import warnings
from typing import Any

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
from modelc.passes import optimize

torch = pytest.importorskip("torch")
runtime = pytest.importorskip("runtime")
from torch_archs import ARCHS  # noqa: E402  (it imports torch)

EXPORTERS = ("dynamo", "torchscript17")
BATCH = ("batch", 1, 4)
SEQ = ("seq", 1, 16)
VARIANTS = ("fixed", "symbolic", "sequence")
"""Shapes fixed by input_shapes; the batch symbolic; the batch and the sequence symbolic."""

REFUSED: dict[tuple[str, str], str] = {
    ("gpt2_past", "sequence"): "'Add of 5 and 'seq' in a shape computation is not supported': "
    "the past length plus the sequence (the positions' Range limit, the keys' length) needs "
    "dim arithmetic; input_shapes fixes 'seq'",
}
"""(architecture, variant) -> the refusal it meets today, on both exporters (a strict xfail,
so a fix shows)."""


def _inputs(name: str) -> dict[str, np.ndarray]:
    return ARCHS[name].inputs(np.random.default_rng(0))


@functools.cache
def _export(name: str, exporter: str, sequence: bool = False) -> bytes:
    """The model exported with axis 0 of every input symbolic, and with ``sequence`` the
    architecture's sequence axes too."""
    arch, inputs = ARCHS[name], _inputs(name)
    args = tuple(torch.from_numpy(a) for a in inputs.values())
    axes = {k: {0: "batch", **({arch.sequence[k]: "seq"} if sequence and k in arch.sequence
                               else {})} for k in inputs}
    names, outputs = list(inputs), list(arch.outputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            logging.getLogger("torch.onnx").setLevel(logging.ERROR)
            dim = {"batch": torch.export.Dim("batch", min=1, max=64),
                   "seq": torch.export.Dim("seq", min=1, max=SEQ[2])}
            shapes = tuple({axis: dim[d] for axis, d in axes[k].items()} for k in inputs)
            program = torch.onnx.export(arch.model(), args, dynamo=True, input_names=names,
                                        output_names=outputs, dynamic_shapes=shapes,
                                        verbose=False)
            return program.model_proto.SerializeToString()
        out = io.BytesIO()
        torch.onnx.export(arch.model(), args, out, dynamo=False, input_names=names,
                          output_names=outputs, dynamic_axes=axes, opset_version=17)
        return out.getvalue()


def _cases() -> list:
    cases = []
    for name in sorted(ARCHS):
        for exporter in EXPORTERS:
            for variant in VARIANTS:
                if variant == "sequence" and not ARCHS[name].sequence:
                    continue
                reason = REFUSED.get((name, variant))
                marks = ([pytest.mark.xfail(reason=reason, raises=modelc.CompileError, strict=True)]
                         if reason else [])
                cases.append(pytest.param(name, exporter, variant, marks=marks,
                                          id=f"{name}-{exporter}-{variant}"))
    return cases


def _runs(name: str, variant: str) -> list[dict[str, np.ndarray]]:
    """The example inputs, then at batch 1 (symbolic batch), or cut to 4 and to 1 along the
    sequence (batch 2, then 1)."""
    inputs = _inputs(name)
    if variant == "fixed":
        return [inputs]
    if variant == "symbolic":
        return [inputs, {k: v[:1] for k, v in inputs.items()}]
    sequence = ARCHS[name].sequence
    return [inputs, *({k: np.take(v[:batch], range(length), axis=sequence[k])
                       if k in sequence else v[:batch] for k, v in inputs.items()}
                      for batch, length in ((2, 4), (1, 1)))]


def _import_kwargs(name: str, variant: str) -> dict[str, Any]:
    """``from_onnx``'s arguments for ``variant``: the shapes fixed, or the symbolic axes
    bounded."""
    inputs, sequence = _inputs(name), ARCHS[name].sequence
    if variant == "fixed":
        return {"input_shapes": {k: v.shape for k, v in inputs.items()}}
    return {"dynamic": {k: {0: BATCH, **({sequence[k]: SEQ} if variant == "sequence"
                                         and k in sequence else {})} for k in inputs}}


def _optimized_ops_matching_ort(name: str, exporter: str, compare_with_ort: Any,
                                variant: str = "fixed") -> collections.Counter[str]:
    """The op counts of ``name``'s optimized graph as ``exporter`` writes it for ``variant``,
    after one module of it matched onnxruntime on every input set of ``_runs`` on every
    provider."""
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    data = _export(name, exporter, variant == "sequence")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # T5's log(0) in the branch not taken
        wasm = modelc.export(modelc.from_onnx(data, **_import_kwargs(name, variant)))
        graph = optimize(modelc.from_onnx(data, **_import_kwargs(name, variant)))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            for run in _runs(name, variant):
                shape = next(iter(run.values())).shape
                compare_with_ort(session.run(dict(run)), data, run, f"{name} by {exporter} "
                                 f"on {kernels}, {variant}, first input {shape}")
    return collections.Counter(node.op for node in graph.nodes)


@pytest.mark.parametrize(("name", "exporter", "variant"), _cases())
def test_arch_in_wasm_matches_onnxruntime(name, exporter, variant, compare_with_ort):
    """One module per variant runs every input set of ``_runs`` on every provider."""
    _optimized_ops_matching_ort(name, exporter, compare_with_ort, variant)


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", ["gpt2", "gpt2_masked"])
def test_gpt2_attention_and_gelu_take_the_fast_paths(name, exporter, compare_with_ort):
    """From both exporters, each layer's attention (the SDPA scale a ``mul`` on Q and K^T, a
    constant causal or an additive padding mask) is one ``head_attention`` node and its
    GELU(tanh) one ``gelu_tanh`` node, computing what onnxruntime computes."""
    ops = _optimized_ops_matching_ort(name, exporter, compare_with_ort)
    layers = 2  # torch_archs' GPT-2
    assert ops["head_attention"] == layers and ops["gelu_tanh"] == layers, ops
    assert not ops["softmax"] and not ops["tanh"] and not ops["matmul"], ops


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_gpt2_attention_fuses_over_a_symbolic_sequence(exporter, compare_with_ort):
    """Over a symbolic sequence the causal mask is computed at run time (``Trilu`` over the
    positions), and each layer's attention is still one ``head_attention`` node."""
    ops = _optimized_ops_matching_ort("gpt2", exporter, compare_with_ort, "sequence")
    assert ops["head_attention"] == 2 and not ops["softmax"] and not ops["matmul"], ops


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", ["vit", "whisper_encoder"])
def test_stacked_qkv_attention_fuses(name, exporter, compare_with_ort):
    """ViT's and Whisper's Q, K and V, cut from one (3, B, H, T, D) permute of the qkv
    projection (slices from dynamo, a split from TorchScript), fuse into one
    ``head_attention`` node per layer, computing what onnxruntime computes."""
    ops = _optimized_ops_matching_ort(name, exporter, compare_with_ort)
    assert ops["head_attention"] == 2 and not ops["softmax"] and not ops["matmul"], ops


COMPUTE_OPS = ("linear", "matmul", "softmax", "head_attention", "layer_norm", "gelu_tanh",
               "rms_norm", "silu")
"""The ops that carry a model's arithmetic; a symbolic sequence adds only position and mask
ops (computed at run time instead of folded)."""


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", sorted(n for n, arch in ARCHS.items() if arch.sequence
                                        and (n, "sequence") not in REFUSED))
def test_a_symbolic_sequence_keeps_the_fixed_graphs_fusions(name, exporter):
    """Every fusion the optimizer makes with the sequence fixed it makes over a symbolic one
    (run-time masks included): the compute ops of both optimized graphs count the same."""
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    counts = []
    for variant in ("fixed", "sequence"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # T5's log(0), as above
            graph = optimize(modelc.from_onnx(_export(name, exporter, variant == "sequence"),
                                              **_import_kwargs(name, variant)))
        ops = collections.Counter(node.op for node in graph.nodes)
        counts.append({op: ops[op] for op in COMPUTE_OPS})
    assert counts[0] == counts[1], counts
