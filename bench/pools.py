"""The pool kernels on the real models' pool shapes beside onnxruntime's MaxPool / AveragePool
(one node, one thread), timed in interleaved rounds in thread CPU time (``kernels.py``'s
rules); no result is asserted.

    .venv/bin/python bench/pools.py [repeat] [--only TEXT]

Each contender runs ``CALLS`` times back to back per timing (its operands stay in cache, as
when a model's previous layer has just written the input). Ours is the prepared kernel call
(``Variant.call``), two calls where ``max_pool2d`` lowers the pool as two separable passes;
``ratio``: ours / onnxruntime per ISA. Shapes (batch 1): ``on`` open_nsfw, ``r18`` ResNet-18,
``v6`` PP-OCRv6 rec (its 2x2/1 pool after the importer's tail padding), ``od``
occular-deskew, ``cs`` CapSpot's siamese net, ``ow`` openWakeWord's embedding, ``cw``
captcha-whisperer, ``sp`` YOLO SPPF (captcha-recognizer's slider).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import Variant, interleaved_seconds  # noqa: E402

from nn import functional as F  # noqa: E402

CALLS = 10
"""Back-to-back calls per timing."""

Pair = tuple[int, int]

# name: (op, input (N, C, H, W), kernel, stride, padding, ceil_mode)
SHAPES: dict[str, tuple[str, tuple[int, int, int, int], Pair, Pair, Pair, bool]] = {
    "on max 3x3/2 ceil 64 @112": ("max", (1, 64, 112, 112), (3, 3), (2, 2), (0, 0), True),
    "r18 max 3x3/2 p1 64 @112": ("max", (1, 64, 112, 112), (3, 3), (2, 2), (1, 1), False),
    "v6 max 2x2/1 48 @25x161": ("max", (1, 48, 25, 161), (2, 2), (1, 1), (0, 0), False),
    "od max 2x2/2 32 @160": ("max", (1, 32, 160, 160), (2, 2), (2, 2), (0, 0), False),
    "od max 2x2/2 64 @80": ("max", (1, 64, 80, 80), (2, 2), (2, 2), (0, 0), False),
    "cs max 2x2/2 64 @60": ("max", (1, 64, 60, 60), (2, 2), (2, 2), (0, 0), False),
    "ow max 1x2/1,2 48 @32x16": ("max", (1, 48, 32, 16), (1, 2), (1, 2), (0, 0), False),
    "cw max 3x3/2 ceil 64 @30x80": ("max", (1, 64, 30, 80), (3, 3), (2, 2), (0, 0), True),
    "sp max 5x5/1 p2 256 @20": ("max", (1, 256, 20, 20), (5, 5), (1, 1), (2, 2), False),
    "on avg 7x7 1024 @7": ("avg", (1, 1024, 7, 7), (7, 7), (1, 1), (0, 0), False),
    "v6 avg 3x2/3,2 384 @3x80": ("avg", (1, 384, 3, 80), (3, 2), (3, 2), (0, 0), False),
}


def _passes(op: str, shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pair,
            ceil: bool) -> list[tuple[tuple[int, ...], tuple[int, ...], tuple[Pair, ...]]]:
    """(input, output, window) of each kernel call the compiled op makes: one, or a max
    pool's two separable passes (``modelc/ops/max_pool2d.py``'s rule)."""
    out = F.max_pool2d(np.zeros(shape, np.float32), kernel, stride, padding, 1, ceil).shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    if op == "max" and kh * shape[3] + kw * out[3] < kh * kw * out[3]:
        rows = (*shape[:2], out[2], shape[3])
        return [(shape, rows, ((kh, 1), (sh, 1), (ph, 0), (1, 1))),
                (rows, out, ((1, kw), (1, sw), (0, pw), (1, 1)))]
    return [(shape, out, (kernel, stride, padding, (1, 1)))]


def _ours(variant: Variant, op: str, x: np.ndarray, kernel: Pair, stride: Pair,
          padding: Pair, ceil: bool) -> Callable[[], object]:
    """The kernel calls of one pool in ``variant``'s memory, each pass reading the one
    before's output."""
    passes = _passes(op, x.shape, kernel, stride, padding, ceil)
    outputs = [np.zeros(out, np.float32) for _, out, _ in passes]
    scale = [np.ones(passes[0][1][2:], np.float32)] if op == "avg" else []
    px, *addresses = variant.place([x, *scale, *outputs])
    calls = []
    for shape, out, window in passes:
        sizes = (shape[0] * shape[1], *shape[2:], *out[2:], *(n for p in window for n in p))
        if op == "max":
            py = addresses.pop(0)
            calls.append(variant.call("f32_max_pool2d", px, py, *sizes))
        else:
            ps, py = addresses
            calls.append(variant.call("f32_avg_pool2d", px, ps, py, *sizes))
        px = py
    return lambda: [call() for _ in range(CALLS) for call in calls]


def _onnxruntime(op: str, x: np.ndarray, kernel: Pair, stride: Pair, padding: Pair,
                 ceil: bool) -> Callable[[], object]:
    """One MaxPool / AveragePool node in onnxruntime, one thread."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("MaxPool" if op == "max" else "AveragePool", ["x"], ["y"],
                            kernel_shape=list(kernel), strides=list(stride),
                            pads=[*padding, *padding], ceil_mode=int(ceil))
    graph = helper.make_graph([node], "pool",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session: Any = ort.InferenceSession(model.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])
    # NOTE: outputs bound once: session.run allocated a fresh output per call, which cost
    # it up to 3x its node time in the profiler (0.68 / 0.20 ms on open_nsfw's pool)
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    out = np.zeros(F.max_pool2d(x, kernel, stride, padding, 1, ceil).shape, np.float32)
    binding.bind_output("y", "cpu", 0, np.float32, list(out.shape),
                        out.__array_interface__["data"][0])
    run = partial(session.run_with_iobinding, binding)
    return lambda: [run() for _ in range(CALLS)] and out


def main() -> None:
    parser = argparse.ArgumentParser(description="pool kernels beside onnxruntime")
    parser.add_argument("repeat", nargs="?", type=int, default=7)
    parser.add_argument("--only", default="", help="the rows whose name contains this")
    args = parser.parse_args()
    isas = ("relaxed", "simd128", "scalar")
    variants = {isa: Variant(isa, pages=800) for isa in isas}
    print(f"pool ms per call (median of {args.repeat} interleaved rounds of {CALLS} calls), "
          "ours per ISA / onnxruntime (one thread)")
    print(f"{'shape':>28}" + "".join(f"{n:>9}" for n in (*isas, "ort"))
          + "".join(f"{n[:7] + '/ort':>12}" for n in isas))
    rng = np.random.default_rng(0)
    for name, (op, shape, kernel, stride, padding, ceil) in SHAPES.items():
        if args.only not in name:
            continue
        x = rng.standard_normal(shape).astype(np.float32)
        runs = {isa: _ours(variant, op, x, kernel, stride, padding, ceil)
                for isa, variant in variants.items()}
        runs["ort"] = _onnxruntime(op, x, kernel, stride, padding, ceil)
        times = interleaved_seconds(runs, args.repeat)
        ms = {key: statistics.median(t) * 1e3 / CALLS for key, t in times.items()}
        print(f"{name:>28}" + "".join(f"{ms[key]:>9.3f}" for key in runs)
              + "".join(f"{ms[isa] / ms['ort']:>12.2f}" for isa in isas))


if __name__ == "__main__":
    main()
