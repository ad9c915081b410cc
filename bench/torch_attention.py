"""A GPT-2-style causal attention block written with torch's ``scaled_dot_product_attention``
(or, with ``--stacked``, ViT's bidirectional one: Q, K and V unbound from one
``reshape(B, T, 3, H, D).permute(2, 0, 3, 1, 4)``) exported by torch's dynamo and TorchScript
exporters: wasm with ``fuse_attention`` (and ``unstack_heads``) against wasm without them (the
score matmul, softmax and weighted sum as separate nodes) and onnxruntime, one thread, in
interleaved rounds of thread CPU time.

    .venv/bin/python bench/torch_attention.py [--tokens 128] [--heads 12] [--width 64]
                                              [--layers 2] [--repeat 15] [--stacked]

Prints per exporter the median milliseconds of each contender and ``fused/unfused`` and
``fused/ort`` ratios. No result is asserted.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import functools
import io
import logging
import statistics
import warnings
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
import torch

import modelc
import runtime
from bench.kernels import interleaved_seconds
from modelc.codegen import generate
from modelc.export import producer
from modelc.passes import PIPELINE, fuse_attention, optimize, unstack_heads


class Block(torch.nn.Module):
    """Pre-norm self-attention with a residual: causal in GPT-2's layout of Q, K and V, or
    bidirectional in ViT's (``stacked``)."""

    def __init__(self, heads: int, width: int, stacked: bool = False) -> None:
        super().__init__()
        self.heads, self.width, self.stacked = heads, width, stacked
        self.norm = torch.nn.LayerNorm(heads * width)
        self.qkv = torch.nn.Linear(heads * width, 3 * heads * width)
        self.out = torch.nn.Linear(heads * width, heads * width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        qkv = self.qkv(self.norm(x))
        if self.stacked:
            q, k, v = qkv.reshape(b, t, 3, self.heads, self.width).permute(2, 0, 3, 1, 4)
        else:
            q, k, v = (y.view(b, t, self.heads, self.width).transpose(1, 2)
                       for y in qkv.split(c, dim=2))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                             is_causal=not self.stacked)
        return x + self.out(y.transpose(1, 2).reshape(b, t, c))


def export(model: torch.nn.Module, x: np.ndarray, exporter: str) -> bytes:
    """``model`` exported as ONNX by ``exporter`` ("dynamo" or "torchscript17")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            logging.getLogger("torch.onnx").setLevel(logging.ERROR)
            program = torch.onnx.export(model, (torch.from_numpy(x),), dynamo=True,
                                        input_names=["x"], output_names=["y"], verbose=False)
            assert program is not None
            return program.model_proto.SerializeToString()
        out = io.BytesIO()
        torch.onnx.export(model, (torch.from_numpy(x),), out,  # type: ignore[arg-type]
                          dynamo=False, input_names=["x"],
                          output_names=["y"], opset_version=17)
        return out.getvalue()


def compiled(data: bytes, shape: tuple[int, ...], fuse: bool) -> bytes:
    """The model module of ``data``, with or without ``fuse_attention`` and
    ``unstack_heads``."""
    pipeline = PIPELINE if fuse else tuple(
        p for p in PIPELINE if p not in (fuse_attention, unstack_heads))
    graph = optimize(modelc.from_onnx(data, input_shapes={"x": shape}), pipeline)
    assert ("head_attention" in graph.ops()) == fuse, graph.ops()
    return generate(graph, producer())[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--stacked", action="store_true", help="ViT's layout, no mask")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(Block(args.heads, args.width, args.stacked)
                                  for _ in range(args.layers))).eval()
    x = np.random.default_rng(0).standard_normal(
        (1, args.tokens, args.heads * args.width)).astype(np.float32)
    layout = "stacked" if args.stacked else "causal"
    print(f"{args.layers} {layout} blocks, {args.tokens} tokens x {args.heads} heads x "
          f"{args.width}, "
          f"batch 1, one thread, median ms of {args.repeat} interleaved rounds")
    for exporter in ("dynamo", "torchscript17"):
        data = export(model, x, exporter)
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        peer = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        sessions = {name: runtime.load(compiled(data, x.shape, fuse), threads=1)
                    for name, fuse in (("fused", True), ("unfused", False))}
        want = peer.run(None, {"x": x})[0]
        for session in sessions.values():
            np.testing.assert_allclose(session.run({"x": x})["y"], want, rtol=1e-3, atol=1e-3)
        runs: dict[str, Callable[[], object]] = {
            name: functools.partial(s.run, {"x": x}) for name, s in sessions.items()}
        runs["ort"] = functools.partial(peer.run, None, {"x": x})
        times = {k: statistics.median(v) * 1e3
                 for k, v in interleaved_seconds(runs, args.repeat).items()}
        print(f"{exporter:>14}: " + "  ".join(f"{k} {v:.2f}" for k, v in times.items())
              + f"  fused/unfused {times['fused'] / times['unfused']:.3f}"
              + f"  fused/ort {times['fused'] / times['ort']:.2f}")
        for session in sessions.values():
            session.close()


if __name__ == "__main__":
    main()
