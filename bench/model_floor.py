"""How close can each model get? Its products' time at the 128-bit peak beside onnxruntime's
time for the whole model, in one run (issues #12, #19).

    .venv/bin/python bench/model_floor.py [--models minilm-b1,resnet18|real] [--repeat 10]

For each model of ``peers.py`` (the real ones included), the optimised graph ``wasmnn`` runs
(``op_profile.model_graph``: the same trace or ONNX import and passes as ``modelc.export``)
is searched for product nodes, and the multiply-adds each really executes are counted
(``product_flops``: a Winograd conv by its grouped product, not the direct conv it replaces;
a depthwise conv by its 9 per output). Then, in this run:

- the 128-bit FMA peak (``native/peak128.c``'s ``fma128``, as ``kernels.py`` times it) and
  the int8 peak (the fastest of ``int8_tiles.py``'s inner loops under wasmtime), medians in
  thread CPU time, measured again before every model;
- onnxruntime native's and wasmnn's one-thread time on the model, each in its own process as
  ``peers.py`` measures them (process CPU time: preemption by other jobs is not counted).

Per model: product GFLOP (f32, int8), **floor ms** = f32 FLOP / FMA peak + int8 ops / int8
peak, the floor's share of our time (how close our products already run to the peak, were
nothing else to run), onnxruntime's ms, the **floor ratio** (floor ms / onnxruntime ms: no
kernel on this engine can bring our ratio under it) and our ratio. The floor assumes every
product at the peak with no loads, which no kernel reaches; it is a bound, not a goal.
Nothing is asserted.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS

import argparse
import collections
import math
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import int8_tiles
import peers
from kernels import PEAK_CALL_FLOPS, interleaved_seconds, native_peaks
from op_profile import model_graph

from modelc.graph import Graph, Node

INT8_OPS = {"qconv2d", "qlinear", "qmatmul"}


def _depthwise(node: Node) -> bool:
    groups = node.attrs.get("groups", 1)
    return groups > 1 and groups == node.inputs[0].shape[1]


def product_flops(graph: Graph) -> dict[str, float]:
    """FLOPs (2 per multiply-add) the product nodes of ``graph`` execute, by family:
    ``conv``, ``depthwise``, ``winograd`` (the grouped 1x1 conv between ``winograd_input``
    and ``winograd_output``), ``deconv``, ``linear``, ``matmul``, ``attention`` (both of
    ``head_attention``'s products), ``recurrent`` (``lstm``, ``gru``, ``rnn``: the hidden state's
    product; the input's is a ``linear``) and ``int8`` (``INT8_OPS``)."""
    if graph.dims:
        raise ValueError(f"count a model with static shapes, not {sorted(graph.dims)}")
    tiles = {n.output.name for n in graph.nodes if n.op == "winograd_input"}
    flops: dict[str, float] = collections.defaultdict(float)
    for node in graph.nodes:
        out = math.prod(node.output.shape)
        if node.op in ("conv2d", "qconv2d"):  # (O, C / groups, KH, KW) products per output
            weight = node.named_inputs()["weight"].shape
            family = ("winograd" if node.inputs[0].name in tiles
                      else "depthwise" if _depthwise(node) else "conv")
            flops["int8" if node.op == "qconv2d" else family] += 2.0 * out * math.prod(weight[1:])
        elif node.op in ("linear", "matmul", "qlinear", "qmatmul"):
            family = "int8" if node.op in INT8_OPS else node.op
            flops[family] += 2.0 * out * node.inputs[0].shape[-1]
        elif node.op == "conv_transpose2d":  # (C, O / groups, KH, KW) per input
            weight = node.named_inputs()["weight"].shape
            flops["deconv"] += 2.0 * math.prod(node.inputs[0].shape) * math.prod(weight[1:])
        elif node.op == "head_attention":
            b, t, h, d = node.inputs[0].shape
            flops["attention"] += 2.0 * 2 * b * t * h * d * node.inputs[1].shape[3]
        elif node.op in ("lstm", "gru", "rnn"):  # h @ W_hh.T per step; W_ih is a linear
            gates, weight = node.named_inputs()["gates"].shape, node.inputs[1].shape
            flops["recurrent"] += 2.0 * math.prod(gates) * weight[1]
    return dict(flops)


def peaks(repeat: int) -> tuple[float, float]:
    """(the 128-bit FMA peak, the int8 inner loops' best) in GFLOPS / GOPS, this moment."""
    runs = native_peaks(PEAK_CALL_FLOPS)
    if "fma128" not in runs:
        raise SystemExit("model_floor needs a C compiler for native/peak128.c's FMA peak")
    times = interleaved_seconds({"fma128": runs["fma128"]}, repeat)["fma128"]
    fma = PEAK_CALL_FLOPS / statistics.median(times) / 1e9
    return fma, max(int8_tiles.tile_gops(repeat, 5000).values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm-b1,resnet18,mobilenet_v2",
                        help="comma-separated models of peers.py or groups (real)")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per model cell")
    parser.add_argument("--budget", type=float, default=6.0, help="seconds per cell")
    args = parser.parse_args()
    names = [n for group in args.models.split(",") for n in peers.GROUPS.get(group, [group])]
    unknown = sorted(set(names) - set(peers.MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; available: {sorted(peers.MODELS)}")
    cell = argparse.Namespace(warmup=2, repeat=args.repeat, budget=args.budget, clock="cpu")
    root = Path(tempfile.mkdtemp(prefix="wasmnn-floor-"))
    os.environ["WASMNN_CACHE_DIR"] = str(root / "cache")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"model floor: load average {load}; 1 thread, CPU time, medians", flush=True)
    head = (f"{'model':<26}{'GFLOP':>7}{'int8':>6}{'FMA pk':>7}{'i8 pk':>7}{'floor ms':>9}"
            f"{'ours ms':>9}{'share':>7}{'ort ms':>8}{'floor/ort':>10}{'ours/ort':>9}"
            "  largest families (GFLOP)")
    rows = []
    try:
        for name in names:
            workdir = root / name
            failed = peers.prepare(name, workdir)
            # an int8 model runs from its quantized ONNX file (peers.py's wasmnn-onnx row)
            ours_runtime = "wasmnn-onnx" if "wasmnn" in failed else "wasmnn"
            onnx = str(workdir / "model.onnx") if ours_runtime == "wasmnn-onnx" else None
            flops = product_flops(model_graph(name, peers.MODELS[name].inputs(), onnx))
            fma, int8 = peaks(7)
            int8_flops = flops.get("int8", 0.0)
            f32 = sum(flops.values()) - int8_flops
            floor = 1e3 * (f32 / fma + int8_flops / int8) / 1e9
            times = {}
            for runtime_name in (ours_runtime, "ort"):
                result = ({"error": failed[runtime_name]} if runtime_name in failed
                          else peers.measure(runtime_name, name, 1, workdir, cell))
                times[runtime_name] = result.get("median_ms", math.nan)
                if "error" in result:
                    print(f"  {name} {runtime_name}: n/a ({result['error']})", flush=True)
            ours, ort = times[ours_runtime], times["ort"]
            families = ", ".join(f"{k} {v / 1e9:.2f}" for k, v in
                                 sorted(flops.items(), key=lambda kv: -kv[1])[:3])
            rows.append(f"{name:<26}{f32 / 1e9:>7.2f}{int8_flops / 1e9:>6.2f}{fma:>7.1f}"
                        f"{int8:>7.1f}{floor:>9.2f}{ours:>9.2f}{floor / ours:>7.2f}{ort:>8.2f}"
                        f"{floor / ort:>10.2f}{ours / ort:>9.2f}  {families}")
            print(rows[-1], flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nload average after: {load}\n{head}\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
