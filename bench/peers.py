"""wasmnn beside its peers, in one run: ONNX Runtime native, ONNX Runtime Web's WASM backend
under Node, and PyTorch on the CPU, on MiniLM, ResNet-18, MobileNetV2, an MLP and an LSTM,
and (``--models real``) on the real models of ``tests/cases/real_models.py`` (``peers_real.py``).

    .venv/bin/python bench/peers.py [--models minilm-b1,mlp|real] [--runtimes wasmnn,ort]
                                    [--threads 1,2] [--repeat 20] [--budget 8] [--json out.json]

Every (runtime, model, threads) cell runs in its own process, so its peak RSS and cold start
(load + first run, imports excluded) are its own: ``peers.py --cell`` for the Python
runtimes and ``node bench/peers_ortweb.mjs`` for ONNX Runtime Web (``npm install --prefix
bench/.peers onnxruntime-web`` first). The same weights run everywhere: torch's random
initialisation (or the MiniLM checkpoint) is copied into ``nn`` for wasmnn and exported to
ONNX (in a temporary folder) for both ONNX Runtimes; every cell's first output is checked
against torch eager. A cell that cannot run prints ``n/a (reason)``.

Threads: every runtime uses intra-op threads (lower latency per call); wasmnn's are
``runtime.load(threads=N)`` on a one-instance session, and the line under the table gives
its N-thread speedup over one thread. The machine is shared: medians, one run, compare
ratios within it; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from peer_models import (  # noqa: F401 - the other bench scripts read these from peers
    DEFAULT_MODELS,
    GROUPS,
    MODELS,
    TITLES,
    nn_model,
    prepare,
    torch_model,
)

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
ORTWEB = BENCH / ".peers" / "node_modules" / "onnxruntime-web"
RUNTIMES = ["wasmnn", "wasmnn-onnx", "ort", "ortweb", "torch"]
LABELS = {"wasmnn": "wasmnn", "wasmnn-onnx": "wasmnn (ONNX)", "ort": "onnxruntime",
          "ortweb": "ORT-web wasm", "torch": "torch cpu"}
ONE_THREAD_ONLY = {"wasmnn-onnx"}
"""The same engine as wasmnn: one column is enough, unless wasmnn itself does not run the model
(the int8 models run only from their onnxruntime-quantized ONNX file)."""


# ---------------------------------------------------------------- one cell (child)


def _timed(run: Callable[[], Any], warmup: int, repeat: int, budget: float,
           clock: Callable[[], float] = time.perf_counter) -> list[float]:
    for _ in range(warmup):
        run()
    times: list[float] = []
    deadline = time.perf_counter() + budget
    while len(times) < repeat and (len(times) < 3 or time.perf_counter() < deadline):
        start = clock()
        run()
        times.append(clock() - start)
    return times


def run_cell(runtime_name: str, name: str, threads: int, workdir: Path,
             args: argparse.Namespace) -> dict[str, Any]:
    """Load, first run, timed runs; the measurements as a dict (in this process)."""
    inputs = dict(np.load(workdir / "inputs.npz"))
    if runtime_name in ("wasmnn", "wasmnn-onnx"):
        import runtime

        path = workdir / ("model.wasm" if runtime_name == "wasmnn" else "model-onnx.wasm")
        start = time.perf_counter()
        session = runtime.load(path, instances=1, threads=threads, max_memory="2GiB")
        output = session.run(inputs)[session.outputs[0].name]
        cold = time.perf_counter() - start

        def run() -> None:
            session.run(inputs)
    elif runtime_name == "ort":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        start = time.perf_counter()
        session = ort.InferenceSession(str(workdir / "model.onnx"), options,
                                       providers=["CPUExecutionProvider"])
        output = session.run(None, inputs)[0]
        cold = time.perf_counter() - start

        def run() -> None:
            session.run(None, inputs)
    elif runtime_name == "torch":
        import torch

        torch.set_num_threads(threads)
        tensors = [torch.from_numpy(v) for v in inputs.values()]
        start = time.perf_counter()
        model = torch_model(MODELS[name].kind, workdir)
        with torch.inference_mode():
            output = model(*tensors).numpy()
        cold = time.perf_counter() - start

        def run() -> None:
            with torch.inference_mode():
                model(*tensors)
    else:
        raise ValueError(f"unknown runtime {runtime_name!r}; available: {RUNTIMES}")
    times = _timed(run, args.warmup, args.repeat, args.budget,
                   time.process_time if args.clock == "cpu" else time.perf_counter)
    return {"median_ms": 1e3 * statistics.median(times), "runs": len(times),
            "cold_ms": 1e3 * cold, "output": np.asarray(output)}


def peak_rss_mb() -> float:
    """This process's peak resident set (``VmHWM``). NOTE: not ``getrusage``, whose
    ``ru_maxrss`` survives ``exec`` and so reports the forking parent's size."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _child(args: argparse.Namespace) -> None:
    runtime_name, name, threads = args.cell.split(":")
    workdir = Path(args.workdir)
    result = run_cell(runtime_name, name, int(threads), workdir, args)
    np.save(workdir / f"out-{runtime_name}-{threads}.npy", result.pop("output"))
    result["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(result))


def _reason(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:160] if lines else "no output"


def measure(runtime_name: str, name: str, threads: int, workdir: Path,
            args: argparse.Namespace) -> dict[str, Any]:
    """One cell in its own process; ``{"error": reason}`` when it cannot run."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1",
               HF_HUB_OFFLINE="1")
    if runtime_name == "ortweb":
        if shutil.which("node") is None:
            return {"error": "node is not on PATH"}
        if not ORTWEB.exists():
            return {"error": "npm install --prefix bench/.peers onnxruntime-web"}
        inputs = np.load(workdir / "inputs.npz")
        spec = {"model": str(workdir / "model.onnx"), "threads": threads, "clock": args.clock,
                "warmup": args.warmup, "repeat": args.repeat, "budget_s": args.budget,
                "output_file": str(workdir / f"out-ortweb-{threads}.bin"),
                "inputs": [{"name": key, "dtype": str(inputs[key].dtype),
                            "shape": list(inputs[key].shape),
                            "file": str(workdir / f"{key}.bin")} for key in inputs]}
        (workdir / "ortweb.json").write_text(json.dumps(spec))
        command = ["node", str(BENCH / "peers_ortweb.mjs"), str(workdir / "ortweb.json")]
    else:
        command = [sys.executable, str(Path(__file__).resolve()), "--cell",
                   f"{runtime_name}:{name}:{threads}", "--workdir", str(workdir),
                   "--warmup", str(args.warmup), "--repeat", str(args.repeat),
                   "--budget", str(args.budget), "--clock", args.clock]
    done = subprocess.run(command, check=False, capture_output=True, text=True, env=env,
                          timeout=900)
    if done.returncode != 0:
        return {"error": _reason(done.stderr)}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    expected = np.load(workdir / "expected.npy")
    if runtime_name == "ortweb":
        got = np.fromfile(workdir / f"out-ortweb-{threads}.bin", np.float32)
    else:
        got = np.load(workdir / f"out-{runtime_name}-{threads}.npy")
    result["max_err"] = (float(np.abs(got.reshape(expected.shape) - expected).max())
                         if got.size == expected.size else float("nan"))
    return result


# ---------------------------------------------------------------- the table


def _size_mb(workdir: Path, runtime_name: str) -> str:
    def mb(path: Path) -> float:
        return path.stat().st_size / 2**20

    if runtime_name == "wasmnn":
        return f"{mb(workdir / 'model.wasm'):.1f}" if (workdir / "model.wasm").exists() else ""
    if runtime_name == "wasmnn-onnx":
        path = workdir / "model-onnx.wasm"
        return f"{mb(path):.1f}" if path.exists() else ""
    if runtime_name == "ortweb" and (workdir / "model.onnx").exists():
        engine = ORTWEB / "dist" / "ort-wasm-simd-threaded.wasm"
        extra = f"+{mb(engine):.1f}" if engine.exists() else ""
        return f"{mb(workdir / 'model.onnx'):.1f}{extra}"
    if runtime_name == "ort" and (workdir / "model.onnx").exists():
        return f"{mb(workdir / 'model.onnx'):.1f}"
    return ""


def print_table(results: dict[str, dict[str, dict[int, dict[str, Any]]]],
                sizes: dict[str, dict[str, str]], threads: list[int]) -> None:
    head = f"{'model':<24}{'runtime':<15}"
    for t in threads:
        head += f"{f'{t}t ms':>10}{'x wasmnn':>9}"
    head += f"{'cold ms':>9}{'RSS MB':>8}{'size MB':>10}{'max err':>9}"
    print(head)
    print("-" * len(head))
    for name, by_runtime in results.items():
        for index, (runtime_name, cells) in enumerate(by_runtime.items()):
            row = f"{TITLES[name] if index == 0 else '':<24}{LABELS[runtime_name]:<15}"
            notes = []
            for t in threads:
                cell = cells.get(t)
                base = by_runtime.get("wasmnn", {}).get(t, {})
                if "median_ms" not in base:  # an int8 row: against wasmnn's ONNX import
                    base = by_runtime.get("wasmnn-onnx", {}).get(1, {})
                if cell is None:
                    row += f"{'':>10}{'':>9}"
                elif "error" in cell:
                    row += f"{'n/a':>10}{'':>9}"
                    notes.append(f"{t}t: {cell['error']}")
                else:
                    ratio = (f"{cell['median_ms'] / base['median_ms']:.2f}"
                             if "median_ms" in base else "")
                    row += f"{cell['median_ms']:>10.2f}{ratio:>9}"
            first = cells.get(threads[0], {})
            if "median_ms" in first:
                row += (f"{first['cold_ms']:>9.0f}{first['peak_rss_mb']:>8.0f}"
                        f"{sizes[name].get(runtime_name, ''):>10}{first['max_err']:>9.1e}")
            print(row)
            for note in dict.fromkeys(notes):
                print(f"{'':<39}n/a ({note})")
        own = by_runtime.get("wasmnn", {})
        if len(threads) > 1 and "median_ms" in own.get(threads[0], {}):
            print(f"{'':<21}wasmnn speedup over {threads[0]}t: " + ", ".join(
                f"{t}t {own[threads[0]]['median_ms'] / own[t]['median_ms']:.2f}x"
                for t in threads[1:] if "median_ms" in own.get(t, {})))
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated models ({', '.join(MODELS)}) or groups of "
                        f"them ({', '.join(sorted(GROUPS))}); default: %(default)s")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES),
                        help="comma-separated runtimes (wasmnn: the model written with nn; "
                        "wasmnn-onnx: torch's ONNX export of it; ort: onnxruntime native; "
                        "ortweb: ONNX Runtime Web's wasm backend in Node; torch: eager "
                        "PyTorch); default: %(default)s")
    parser.add_argument("--threads", default="1,2",
                        help="comma-separated thread counts per cell; default: %(default)s")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--budget", type=float, default=8.0, help="seconds of timed runs "
                        "per cell (at least 3 runs)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="time runs in wall-clock time, or in the process's CPU time (on a "
                        "loaded machine: preemption is not counted; 1-thread cells only; "
                        "ORT-web: its main thread's, a mean over the runs)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--keep", help="keep the artifacts (.wasm, .onnx) in this folder")
    parser.add_argument("--cell", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cell:
        _child(args)
        return 0
    names = [n for group in args.models.split(",") for n in GROUPS.get(group, [group])]
    runtimes = args.runtimes.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    for value, known in ((names, MODELS), (runtimes, RUNTIMES)):
        unknown = sorted(set(value) - set(known))
        if unknown:
            parser.error(f"unknown {unknown}; available: {list(known)}")
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="wasmnn-peers-"))
    # NOTE: an empty compiled-code cache, so wasmnn's 1-thread cold start includes compiling
    # the model and kernels; the 2-thread cells then start from the cache.
    os.environ["WASMNN_CACHE_DIR"] = str(root / "cache")
    print(f"wasmnn peers: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"{os.cpu_count()} CPUs, artifacts in {root}", flush=True)
    results: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    sizes: dict[str, dict[str, str]] = {}
    try:
        for name in names:
            workdir = root / name
            start = time.perf_counter()
            failed = prepare(name, workdir)
            print(f"prepared {name} in {time.perf_counter() - start:.0f} s"
                  + "".join(f"; {k}: {v}" for k, v in failed.items()), flush=True)
            results[name] = {}
            sizes[name] = {r: _size_mb(workdir, r) for r in runtimes}
            for runtime_name in runtimes:
                cells = results[name].setdefault(runtime_name, {})
                for t in threads:
                    if (t > 1 and runtime_name in ONE_THREAD_ONLY and "wasmnn" in runtimes
                            and "wasmnn" not in failed):
                        continue
                    cells[t] = ({"error": failed[runtime_name]} if runtime_name in failed
                                else measure(runtime_name, name, t, workdir, args))
                    shown = (f"{cells[t]['median_ms']:.2f} ms" if "median_ms" in cells[t]
                             else f"n/a ({cells[t]['error']})")
                    print(f"  {runtime_name:<12} {t}t {shown}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print_table(results, sizes, threads)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
