"""Memory that follows the input (issue #21): a model exported for a range of dims against
the same model exported at fixed dims, and MiniLM's peak RSS beside onnxruntime's (#12).

    .venv/bin/python bench/memory.py [--only resnet18,minilm] [--repeat 15] [--json out.json]

Exports, in a temporary folder: ResNet-18 through ONNX with a dynamic batch (bounded by the
importer's default, 1..512) and with the batch fixed at 1; MiniLM (the all-MiniLM-L6-v2
checkpoint) with batch 1..64 and sequence 1..512, and fixed at 1 x 128. Then:

- each case runs in a fresh process (load, one run, ``--repeat`` runs) under its
  ``--max-memory``, which reports its peak RSS (``VmHWM``), the instance's linear memory
  after the runs, and the time of load + first run; onnxruntime runs MiniLM's ONNX export
  the same way, for #12's RSS target (everything on one thread);
- latency: the dynamic and the fixed export load in one process and run in alternating
  rounds; the ratio is the median of per-round ratios (thread CPU time), printed with the
  load average.

Nothing is asserted; the machine is shared (see ``bench/README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
for folder in (BENCH.parent / "examples" / "minilm", BENCH, BENCH.parent):
    sys.path.insert(0, str(folder))  # NOTE: this checkout's packages first

CASES = {
    # name: (model file, input set, max_memory)
    "resnet18 1..512, batch 1": ("resnet18-dynamic.wasm", "resnet18", "128MiB"),
    "resnet18 fixed 1, batch 1": ("resnet18-fixed.wasm", "resnet18", "128MiB"),
    "minilm 1..64 x 1..512, 1x128": ("minilm-dynamic.wasm", "minilm", "1GiB"),
    "minilm fixed 1x128": ("minilm-fixed.wasm", "minilm", "1GiB"),
    "onnxruntime minilm 1x128": ("minilm.onnx", "minilm", ""),
}
PAIRS = {"resnet18": ("resnet18-dynamic.wasm", "resnet18-fixed.wasm"),
         "minilm": ("minilm-dynamic.wasm", "minilm-fixed.wasm")}


def _inputs(kind: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    if kind == "resnet18":
        return {"x": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
    ids = rng.integers(1000, 30000, (1, 128), dtype=np.int64)
    ids[:, 0], ids[:, -1] = 101, 102
    return {"input_ids": ids, "attention_mask": np.ones((1, 128), np.int64)}


def prepare(workdir: Path, only: set[str]) -> None:
    """Write every model file the cases need into ``workdir``."""
    import torch
    from peers import nn_model, torch_model

    import modelc

    if "resnet18" in only:
        reference = torch_model("resnet18")
        x = torch.from_numpy(_inputs("resnet18")["x"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(reference, (x,), str(workdir / "resnet18.onnx"), input_names=["x"],
                              output_names=["output0"], opset_version=17, dynamo=False,
                              dynamic_axes={"x": {0: "batch"}})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            modelc.export(workdir / "resnet18.onnx", None, workdir / "resnet18-dynamic.wasm")
        for warning in caught:
            print(f"export warned: {warning.message}")
        modelc.export(workdir / "resnet18.onnx", {"x": (1, 3, 224, 224)},
                      workdir / "resnet18-fixed.wasm")
    if "minilm" in only:
        inputs = _inputs("minilm")
        encoder = nn_model("minilm", None)
        dims = {0: ("batch", 1, 64), 1: ("seq", 1, 512)}
        modelc.export(encoder, inputs, workdir / "minilm-dynamic.wasm",
                      dynamic={name: dims for name in inputs})
        modelc.export(encoder, inputs, workdir / "minilm-fixed.wasm")
        exportable = torch_model("minilm", for_export=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(exportable, tuple(torch.from_numpy(v) for v in inputs.values()),
                              str(workdir / "minilm.onnx"), input_names=list(inputs),
                              output_names=["output0"], opset_version=17, dynamo=False)


def peak_rss_mb() -> float:
    """This process's peak resident set (``VmHWM``; ``ru_maxrss`` survives ``exec``)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cell(path: Path, kind: str, max_memory: str, repeat: int) -> dict[str, Any]:
    """One case in this (fresh) process."""
    inputs = _inputs(kind)
    start = time.perf_counter()
    if path.suffix == ".onnx":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        session: Any = ort.InferenceSession(str(path), options,
                                            providers=["CPUExecutionProvider"])
        run = lambda: session.run(None, inputs)  # noqa: E731
        memory = float("nan")
    else:
        import runtime

        session = runtime.load(path, max_memory=max_memory, instances=1, threads=1)
        run = lambda: session.run(inputs)  # noqa: E731
    run()
    cold = time.perf_counter() - start
    for _ in range(repeat):
        run()
    if path.suffix != ".onnx":
        instance = session._pool._idle[0]  # NOTE: the one instance, idle between runs
        memory = instance.memory.data_len(instance.compartment.store) / 2**20
    return {"rss_mb": peak_rss_mb(), "memory_mb": memory, "cold_ms": 1e3 * cold}


def latency(workdir: Path, kind: str, rounds: int) -> tuple[float, float, float]:
    """Median per-round ratio dynamic / fixed (thread CPU time), and the two medians."""
    import runtime

    dynamic, fixed = (runtime.load(workdir / name, instances=1, threads=1)
                      for name in PAIRS[kind])
    inputs = _inputs(kind)
    times: list[tuple[float, float]] = []
    for session in (dynamic, fixed):
        session.run(inputs)
    for _ in range(rounds):
        pair = []
        for session in (dynamic, fixed):
            start = time.thread_time()
            session.run(inputs)
            pair.append(time.thread_time() - start)
        times.append((pair[0], pair[1]))
    return (statistics.median(a / b for a, b in times),
            1e3 * statistics.median(a for a, _ in times),
            1e3 * statistics.median(b for _, b in times))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="resnet18,minilm")
    parser.add_argument("--repeat", type=int, default=5, help="runs after the first, per cell")
    parser.add_argument("--rounds", type=int, default=15, help="latency rounds")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--cell", nargs=4, metavar=("PATH", "KIND", "MAX_MEMORY", "REPEAT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cell:
        path, kind, max_memory, repeat = args.cell
        print(json.dumps(cell(Path(path), kind, max_memory, int(repeat))))
        return 0
    only = set(args.only.split(","))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        prepare(workdir, only)
        print(f"{'case':34}{'max mem':>9}{'RSS MB':>9}{'memory MB':>11}{'cold ms':>9}")
        for name, (file, kind, max_memory) in CASES.items():
            if kind not in only:
                continue
            done = subprocess.run([sys.executable, __file__, "--cell", str(workdir / file), kind,
                                   max_memory or "-", str(args.repeat)],
                                  capture_output=True, text=True, env=os.environ)
            if done.returncode != 0:
                print(f"{name:34}{max_memory:>9}  failed: {done.stderr.strip().splitlines()[-1]}")
                results[name] = {"error": done.stderr.strip().splitlines()[-1]}
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            results[name] = row
            print(f"{name:34}{max_memory or '-':>9}{row['rss_mb']:>9.1f}"
                  f"{row['memory_mb']:>11.1f}{row['cold_ms']:>9.0f}")
        for kind in sorted(only & set(PAIRS)):
            load = os.getloadavg()[0]
            ratio, dyn, fix = latency(workdir, kind, args.rounds)
            results[f"latency {kind}"] = {"ratio": ratio, "dynamic_ms": dyn, "fixed_ms": fix}
            print(f"latency {kind}: dynamic {dyn:.1f} ms, fixed {fix:.1f} ms, median ratio "
                  f"{ratio:.3f} (load {load:.1f} -> {os.getloadavg()[0]:.1f})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
