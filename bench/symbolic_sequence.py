"""A GPT-2-style model (token and learned position embeddings, ``bench/torch_attention.py``'s
causal blocks) exported with a symbolic sequence (``dynamic_axes``), compiled once with the
sequence symbolic in [1, --max-tokens] and once per length with it fixed: the compile time
of each (thread CPU time of import, optimization and code generation) and the run time of
the symbolic module beside the fixed one at each length, one thread, in interleaved rounds,
with onnxruntime's for scale.

    .venv/bin/python bench/symbolic_sequence.py [--tokens 32 128] [--max-tokens 128]
        [--heads 12] [--width 64] [--layers 2] [--repeat 15] [--exporter torchscript17]

Prints per length the median milliseconds of each contender and ``symbolic/fixed``. No result
is asserted.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import functools
import io
import logging
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
import torch

import modelc
import runtime
from bench.kernels import interleaved_seconds
from bench.torch_attention import Block
from modelc.codegen import generate
from modelc.export import producer
from modelc.passes import optimize


class GPT2(torch.nn.Module):
    """Token ids to hidden states: embeddings of the tokens and of their positions
    (``arange`` of the sequence length), then causal blocks."""

    def __init__(self, vocab: int, heads: int, width: int, layers: int, max_tokens: int):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, heads * width)
        self.wpe = torch.nn.Embedding(max_tokens, heads * width)
        self.blocks = torch.nn.Sequential(*(Block(heads, width) for _ in range(layers)))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1])
        return self.blocks(self.wte(ids) + self.wpe(positions))


def export(model: torch.nn.Module, ids: np.ndarray, exporter: str, max_tokens: int) -> bytes:
    """``model`` exported with a symbolic batch and sequence."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            logging.getLogger("torch.onnx").setLevel(logging.ERROR)
            dims = {0: torch.export.Dim("batch", min=1, max=64),
                    1: torch.export.Dim("seq", min=1, max=max_tokens)}
            program = torch.onnx.export(model, (torch.from_numpy(ids),), dynamo=True,
                                        input_names=["ids"], output_names=["y"],
                                        dynamic_shapes=(dims,), verbose=False)
            assert program is not None
            return program.model_proto.SerializeToString()
        out = io.BytesIO()
        torch.onnx.export(model, (torch.from_numpy(ids),), out,  # type: ignore[arg-type]
                          dynamo=False, input_names=["ids"], output_names=["y"],
                          dynamic_axes={"ids": {0: "batch", 1: "seq"}}, opset_version=17)
        return out.getvalue()


def compiled(data: bytes, **kwargs: Any) -> tuple[bytes, float]:
    """The model module and the thread CPU seconds of import, optimization and codegen
    (each attention fused into ``head_attention``, checked)."""
    start = time.thread_time()
    graph = optimize(modelc.from_onnx(data, **kwargs))
    wasm = generate(graph, producer())[0]
    seconds = time.thread_time() - start
    assert "head_attention" in graph.ops(), graph.ops()
    return wasm, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--exporter", choices=("dynamo", "torchscript17"),
                        default="torchscript17")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = GPT2(256, args.heads, args.width, args.layers, args.max_tokens).eval()
    rng = np.random.default_rng(0)
    data = export(model, rng.integers(0, 256, (1, args.tokens[0])), args.exporter,
                  args.max_tokens)
    compiled(data, input_shapes={"ids": (1, args.tokens[0])})  # warm-up: imports, caches
    symbolic, seconds = compiled(data, dynamic={"ids": {0: ("batch", 1, 1),
                                                        1: ("seq", 1, args.max_tokens)}})
    print(f"{args.layers} causal blocks of {args.heads} heads x {args.width} by "
          f"{args.exporter}, batch 1, one thread, median ms of {args.repeat} interleaved rounds")
    print(f"compile symbolic seq [1, {args.max_tokens}]: {seconds:.2f} s")
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    peer = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    with runtime.load(symbolic, threads=1) as any_length:
        for tokens in args.tokens:
            ids = rng.integers(0, 256, (1, tokens))
            wasm, seconds = compiled(data, input_shapes={"ids": ids.shape})
            with runtime.load(wasm, threads=1) as fixed:
                want = peer.run(None, {"ids": ids})[0]
                for session in (fixed, any_length):
                    np.testing.assert_allclose(session.run({"ids": ids})["y"], want,
                                               rtol=1e-3, atol=1e-3)
                runs: dict[str, Callable[[], object]] = {
                    "fixed": functools.partial(fixed.run, {"ids": ids}),
                    "symbolic": functools.partial(any_length.run, {"ids": ids}),
                    "ort": functools.partial(peer.run, None, {"ids": ids})}
                times = {k: statistics.median(v) * 1e3
                         for k, v in interleaved_seconds(runs, args.repeat).items()}
            print(f"seq {tokens:>4}: compile fixed {seconds:.2f} s; "
                  + "  ".join(f"{k} {v:.2f}" for k, v in times.items())
                  + f"  symbolic/fixed {times['symbolic'] / times['fixed']:.3f}"
                  + f"  symbolic/ort {times['symbolic'] / times['ort']:.2f}")


if __name__ == "__main__":
    main()
