"""Per ONNX node, our in-situ time beside onnxruntime's, one thread (issue #19).

    .venv/bin/python bench/ort_node_ratio.py --model opennsfw [--runs 5] [--top 25]

A real model of ``peers.py`` (its own ``.onnx`` file) runs twice in this process:

- ours: ``op_profile.profile``'s *in situ* time of every node of the optimised graph (each
  node once, in graph order, caches as cold as in ``run``; thread CPU time, medians over
  ``--runs`` passes);
- onnxruntime's: its profiler (``SessionOptions.enable_profiling``, one intra-op thread, its
  graph optimisations on), each kernel's duration per run, the fastest of ``--runs`` runs
  after two warm-ups (wall time: preemption by other jobs only adds to it).

Both sides are mapped back to the ONNX node they come from: ours by the node's source
(the importer records it; a pass's rewrite keeps it: Winograd's three nodes, a conv as a
linear), onnxruntime's by its kernel's name, which is a node's name or, for a fused or
NCHWc node, the name of the value it writes (walked back to the conv whose weight shape the
kernel reads). Nodes only one side has (onnxruntime's layout reorders, our channels-last
moves) keep a row of their own. Rows: the ONNX node, its op (a conv's kernel/stride
cin->cout @out, ``/g`` for groups), the kernel that runs it here, our ms, onnxruntime's ms,
the ratio, largest loss (ours - onnxruntime's) first; then the same summed per conv shape.
The machine is shared: compare ratios of one run, not milliseconds across runs.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import op_profile
import peers
import peers_real

from modelc.graph import Graph, Node
from modelc.ops.conv2d import kernel_path

SOURCE = re.compile(r"ONNX node '(.*)' \(")


def our_kernel(node: Node) -> str:
    """What runs a node of ours, in a few letters (a Winograd conv by its tile)."""
    if node.op == "winograd_output":
        return f"wino F{node.attrs['tile']}"
    if node.op == "conv2d" and not node.name.endswith("_products"):
        return kernel_path(node)
    return node.op


def ours(graph: Graph, inputs: dict[str, np.ndarray], runs: int
         ) -> tuple[float, dict[str, float], dict[str, str]]:
    """(our run's median ms, in-situ ms per ONNX node, the kernel that runs it) of an
    imported and optimised ``graph``."""
    whole, in_situ, _ = op_profile.profile(graph, inputs, "relaxed", runs)
    times: dict[str, float] = collections.defaultdict(float)
    kernels: dict[str, str] = {}
    for node, seconds in zip(graph.nodes, in_situ):
        match = SOURCE.match(str(node.meta.get("source", "")))
        key = match.group(1) if match else f"(ours) {op_profile.label(node)}"
        times[key] += 1e3 * seconds
        if node.op in ("conv2d", "winograd_output", "linear") and key not in kernels:
            kernels[key] = our_kernel(node)
        if node.op == "winograd_output":
            kernels[key] = our_kernel(node)
    return whole, dict(times), kernels


class _Onnx:
    """The ONNX graph's node names, value producers and initializer shapes."""

    def __init__(self, path: Path) -> None:
        import onnx

        model = onnx.load(str(path), load_external_data=False)
        self.nodes = {node.name: node for node in model.graph.node}
        self.producer = {out: node for node in model.graph.node for out in node.output}
        self.shapes = {t.name: tuple(t.dims) for t in model.graph.initializer}

    def resolve(self, kernel: str, event: dict[str, Any]) -> str | None:
        """The ONNX node an onnxruntime kernel runs (for a conv, the conv), else None."""
        name = kernel.removesuffix("_nchwc")
        node = next((self.nodes.get(n) or self.producer.get(n)
                     for n in (name, name.split("/")[0]) if n in self.nodes or n in self.producer),
                    None)
        if node is None:
            return None
        if event["op_name"] not in ("Conv", "FusedConv"):
            return str(node.name)
        # the nearest conv up the fused chain; NCHWc pads a weight's channels to 8 or 16
        weight = _shape(event["input_type_shape"][1])
        queue, seen = [node], set()
        while queue:
            node = queue.pop(0)
            if node.name in seen:
                continue
            seen.add(node.name)
            shape = self.shapes.get(node.input[1], weight) if node.op_type == "Conv" else ()
            if len(shape) == 4 and all(a <= b <= a + 15 for a, b in zip(shape, weight)):
                return str(node.name)
            queue.extend(self.producer[i] for i in node.input if i in self.producer)
        return None

    def conv_label(self, name: str, event: dict[str, Any]) -> str:
        """``k3x3/1 64->64 @56x56`` (``/g8`` for groups) of ONNX conv ``name``, its output
        plane as onnxruntime ran it."""
        node = self.nodes[name]
        attrs = {a.name: a for a in node.attribute}
        groups = attrs["group"].i if "group" in attrs else 1
        stride = attrs["strides"].ints[0] if "strides" in attrs else 1
        o, per_group, kh, kw = self.shapes.get(node.input[1], _shape(event["input_type_shape"][1]))
        out = _shape(event["output_type_shape"][0])
        grouped = f"/g{groups}" if groups > 1 else ""
        return f"k{kh}x{kw}/{stride} {per_group * groups}->{o}{grouped} @{out[2]}x{out[3]}"


LABEL = re.compile(r"k(\d+)x(\d+)/\d+ (\d+)->(\d+)(?:/g(\d+))? @(\d+)x(\d+)")


def label_flops(label: str) -> float:
    """The FLOPs (2 per multiply-add) of one image through the conv ``conv_label`` names."""
    kh, kw, c, o, groups, oh, ow = LABEL.match(label).groups()  # type: ignore[union-attr]
    return 2.0 * int(kh) * int(kw) * int(c) // int(groups or 1) * int(o) * int(oh) * int(ow)


def _shape(entry: dict[str, list[int]]) -> list[int]:
    return list(next(iter(entry.values())))


def onnxruntime(path: Path, inputs: dict[str, np.ndarray], runs: int
                ) -> tuple[float, dict[str, float], dict[str, str]]:
    """(onnxruntime's fastest run in ms, its ms per ONNX node, each node's op or conv label)."""
    import onnxruntime as ort

    graph = _Onnx(path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as folder:
        options.profile_file_prefix = str(Path(folder) / "ort")
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        for _ in range(2 + runs):
            session.run(None, inputs)
        events = json.loads(Path(session.end_profiling()).read_text())
    passes = [e for e in events if e.get("cat") == "Session" and e["name"] == "model_run"][2:]
    per_run: dict[str, list[float]] = collections.defaultdict(lambda: [0.0] * len(passes))
    labels: dict[str, str] = {}
    for event in events:
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        run = next((i for i, p in enumerate(passes)
                    if p["ts"] <= event["ts"] <= p["ts"] + p["dur"]), None)
        if run is None:
            continue
        kernel = event["name"].removesuffix("_kernel_time")
        args = event["args"]
        key = graph.resolve(kernel, args) or f"(ort) {args['op_name']} {kernel}"
        per_run[key][run] += event["dur"] / 1e3
        conv = (args["op_name"] in ("Conv", "FusedConv") and key in graph.nodes
                and graph.nodes[key].op_type == "Conv")
        labels.setdefault(key, graph.conv_label(key, args) if conv else args["op_name"])
    whole = min(p["dur"] / 1e3 for p in passes)
    return whole, {k: min(v) for k, v in per_run.items()}, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="opennsfw", choices=peers_real.NAMES)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=25, help="rows of the per-node table")
    args = parser.parse_args()
    inputs = peers.MODELS[args.model].inputs()
    ort_whole, theirs, labels = onnxruntime(peers_real.path(args.model), inputs, args.runs)
    our_whole, mine, kernels = ours(op_profile.model_graph(args.model, inputs), inputs,
                                    args.runs)
    print(f"{args.model}: run ours {our_whole:.1f} ms, onnxruntime (profiled) {ort_whole:.1f} ms "
          f"({our_whole / ort_whole:.2f}x); nodes ours {sum(mine.values()):.1f} ms, "
          f"onnxruntime {sum(theirs.values()):.1f} ms")
    keys = sorted(set(mine) | set(theirs),
                  key=lambda k: -(mine.get(k, 0.0) - theirs.get(k, 0.0)))
    print(f"\n{'ONNX node':<44}{'op':<26}{'ours by':>11}{'ours ms':>9}{'ort ms':>8}"
          f"{'ratio':>7}{'lost':>7}")
    for key in keys[:args.top]:
        a, b = mine.get(key, 0.0), theirs.get(key, 0.0)
        print(f"{key[-43:]:<44}{labels.get(key, '-'):<26}{kernels.get(key, '-'):>11}"
              f"{a:>9.3f}{b:>8.3f}{a / b if b else float('inf'):>7.2f}{a - b:>7.2f}")
    shapes: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for key, label in labels.items():
        if label.startswith("k"):
            row = shapes[(label, kernels.get(key, "-"))]
            row[0] += 1
            row[1] += mine.get(key, 0.0)
            row[2] += theirs[key]
    print(f"\n{'conv shape (GFLOPS: one image)':<34}{'ours by':>11}{'nodes':>6}{'ours ms':>9}"
          f"{'ort ms':>8}{'ratio':>7}{'lost':>7}{'ours GF/s':>10}{'ort GF/s':>9}")
    for (label, kernel), (count, a, b) in sorted(shapes.items(),
                                                 key=lambda kv: -(kv[1][1] - kv[1][2])):
        flops = count * label_flops(label) / 1e6  # per ms: GFLOPS
        print(f"{label:<34}{kernel:>11}{count:>6.0f}{a:>9.3f}{b:>8.3f}{a / b:>7.2f}"
              f"{a - b:>7.2f}{flops / max(a, 1e-9):>10.1f}{flops / max(b, 1e-9):>9.1f}")


if __name__ == "__main__":
    main()
