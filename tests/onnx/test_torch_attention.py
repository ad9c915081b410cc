"""torch's ``scaled_dot_product_attention`` as users write it, exported by torch 2.13's dynamo
and TorchScript exporters: the scale both write as a ``mul`` on the query (and on K^T) before
the score matmul and a constant causal mask fuse into one ``head_attention`` node, which
computes what onnxruntime computes on every kernel provider; a mask the kernel does not take
leaves the attention unfused and still right."""

from __future__ import annotations

import io
import logging
import warnings

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
from modelc.passes import optimize

torch = pytest.importorskip("torch")
runtime = pytest.importorskip("runtime")
F = torch.nn.functional

BATCH, LENGTH, HEADS, WIDTH = 2, 9, 3, 8


class _Attention(torch.nn.Module):
    """GPT-2's layout: one projection split into Q, K and V (or BERT's: one each), their
    (B, T, H, D) heads transposed to (B, H, T, D) for SDPA and back."""

    def __init__(self, mask: str, scale: float | None, split: bool = True) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.qkv = torch.nn.Linear(HEADS * WIDTH, 3 * HEADS * WIDTH)
        self.split = split  # one projection split in three, or Q, K and V each its own
        self.q, self.k, self.v = (torch.nn.Linear(HEADS * WIDTH, HEADS * WIDTH)
                                  for _ in range(3))
        self.out = torch.nn.Linear(HEADS * WIDTH, HEADS * WIDTH)
        self.mask, self.scale = mask, scale
        if mask == "per_head":  # (H, T, T): a mask for each head, not a form the kernel takes
            self.register_buffer("bias", torch.randn(HEADS, LENGTH, LENGTH))

    def forward(self, x):  # type: ignore[no-untyped-def]
        b, t, _ = x.shape
        projected = (self.qkv(x).split(HEADS * WIDTH, dim=2) if self.split
                     else (self.q(x), self.k(x), self.v(x)))
        q, k, v = (y.view(b, t, HEADS, WIDTH).transpose(1, 2) for y in projected)
        mask = self.bias if self.mask == "per_head" else None
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           is_causal=self.mask == "causal", scale=self.scale)
        return self.out(y.transpose(1, 2).reshape(b, t, HEADS * WIDTH))


def _export(model: torch.nn.Module, x: np.ndarray, exporter: str) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            pytest.importorskip("onnxscript")
            logging.getLogger("torch.onnx").setLevel(logging.ERROR)
            program = torch.onnx.export(model, (torch.from_numpy(x),), dynamo=True,
                                        input_names=["x"], output_names=["y"], verbose=False)
            return program.model_proto.SerializeToString()
        out = io.BytesIO()
        torch.onnx.export(model, (torch.from_numpy(x),), out, dynamo=False, input_names=["x"],
                          output_names=["y"], opset_version=17)
        return out.getvalue()


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript17"])
@pytest.mark.parametrize(("mask", "scale", "split", "fuses"), [
    ("none", None, True, True), ("causal", None, True, True), ("none", 0.3, True, True),
    ("causal", 2.0, True, True), ("causal", None, False, True), ("per_head", None, True, False)])
def test_exported_sdpa_fuses_and_matches_onnxruntime(exporter, mask, scale, split, fuses,
                                                     compare_with_ort) -> None:
    x = np.random.default_rng(0).standard_normal((BATCH, LENGTH, HEADS * WIDTH)).astype(
        np.float32)
    data = _export(_Attention(mask, scale, split).eval(), x, exporter)
    graph = modelc.from_onnx(data, input_shapes={"x": x.shape})
    ops = [node.op for node in optimize(graph).nodes]
    assert ops.count("head_attention") == (1 if fuses else 0), ops
    assert ("softmax" in ops) != fuses, ops
    if fuses:  # the scale is a mul on Q's (B, T, H, D) heads, or in Q's projection's weights
        assert ops.count("mul") == (1 if split else 0), ops
    wasm = modelc.export(modelc.from_onnx(data, input_shapes={"x": x.shape}))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            compare_with_ort(session.run({"x": x}), data, {"x": x},
                             f"{mask} mask, scale {scale}, by {exporter} on {kernels}")
