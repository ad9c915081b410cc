"""Embedding benchmarks: cold start and thread scaling of ``runtime.Session``, small-call
overhead, and MiniLM's cold start.

    .venv/bin/python bench/embedding.py [--repeats 7] [--runs 200]
    .venv/bin/python bench/embedding.py --small [--rounds 9]      # small_calls.py's table
    .venv/bin/python bench/embedding.py --minilm [--repeats 7]    # MiniLM load + first run

Cold start: each repeat uses a fresh, empty cache directory and two fresh Python processes;
each process imports ``runtime`` (not timed) and times one ``runtime.load`` of the model.
The first process compiles everything and fills the disk cache; the second loads from it.
Thread scaling: one session, ``--runs`` calls of ``Session.run`` spread over 1 or 2 threads;
throughput is runs per second. Every figure is a median over the repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import modelc
import nn
import runtime

BATCH = 64
_CHILD = """
import sys, time
import runtime
start = time.perf_counter()
runtime.load(sys.argv[1])
print(time.perf_counter() - start)
"""


_MINILM_CHILD = """
import sys, time
import numpy as np
import runtime
inputs = dict(np.load(sys.argv[2]))
start = time.perf_counter()
session = runtime.load(sys.argv[1], max_memory="2GiB", instances=1)
loaded = time.perf_counter()
session.run(inputs)
first = time.perf_counter()
session.run(inputs)
print(loaded - start, first - loaded, time.perf_counter() - first)
"""


def minilm_cold_start(repeats: int) -> None:
    """Print the medians of MiniLM's warm-cache load, first run and second run."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "minilm"))
    from sentence_encoder import SentenceEncoder, find_minilm

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30000, (1, 128), dtype=np.int64)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    inputs = {"input_ids": ids, "attention_mask": np.ones((1, 128), np.int64)}
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cache:
        model, data = Path(tmp) / "minilm.wasm", Path(tmp) / "inputs.npz"
        modelc.export(SentenceEncoder.from_pretrained(find_minilm()), inputs, model)
        np.savez(data, **inputs)
        env = dict(os.environ, WASMNN_CACHE_DIR=cache)

        def child() -> list[float]:
            out = subprocess.run([sys.executable, "-c", _MINILM_CHILD, str(model), str(data)],
                                 env=env, check=True, capture_output=True, text=True).stdout
            return [float(v) for v in out.split()]

        child()  # NOTE: fills the cache
        runs = [child() for _ in range(repeats)]
    load, first, second = (1e3 * statistics.median(r[i] for r in runs) for i in range(3))
    print(f"MiniLM b1 s128, warm cache, fresh processes, medians of {repeats} (load average "
          f"{os.getloadavg()[0]:.1f}):")
    print(f"| runtime.load | first run | load + first run | second run |\n| --- | --- | --- | "
          f"--- |\n| {load:.0f} ms | {first:.0f} ms | {load + first:.0f} ms | {second:.0f} ms |")


def build_model(path: Path) -> None:
    """An MLP 256 -> 512 -> 512 -> 10, batch in [1, 64], about 1 MB of weights."""
    np.random.seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10)).eval()
    modelc.export(model, {"x": np.zeros((2, 256), np.float32)}, path,
                  dynamic={"x": {0: ("batch", 1, BATCH)}})


def _load_in_fresh_process(model: Path, cache: str) -> float:
    env = dict(os.environ, WASMNN_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(model)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def cold_start(model: Path, repeats: int) -> tuple[float, float]:
    """Median seconds of the first and the second ``runtime.load`` in fresh processes."""
    first, second = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            first.append(_load_in_fresh_process(model, cache))
            second.append(_load_in_fresh_process(model, cache))
    return statistics.median(first), statistics.median(second)


def throughput(session: runtime.Session, threads: int, runs: int, repeats: int) -> float:
    """Median runs per second with ``runs`` calls split over ``threads`` threads."""
    x = np.random.default_rng(0).standard_normal((BATCH, 256)).astype(np.float32)
    per_thread = runs // threads

    def work() -> None:
        for _ in range(per_thread):
            session.run(x)

    rates = []
    for _ in range(repeats):
        pool = [threading.Thread(target=work) for _ in range(threads)]
        start = time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        rates.append(per_thread * threads / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--small", action="store_true",
                        help="only the small-model table (bench/small_calls.py)")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of --small")
    parser.add_argument("--minilm", action="store_true", help="only MiniLM's cold start")
    args = parser.parse_args()
    if args.small:
        import small_calls
        small_calls.print_rows(small_calls.measure(args.rounds))
        return
    if args.minilm:
        minilm_cold_start(args.repeats)
        return
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "mlp.wasm"
        build_model(model)
        size = model.stat().st_size
        first, second = cold_start(model, args.repeats)
        with runtime.load(model, instances=2) as session:
            session.run(np.zeros((BATCH, 256), np.float32))
            one = throughput(session, 1, args.runs, args.repeats)
            two = throughput(session, 2, args.runs, args.repeats)
    print(f"model: MLP 256-512-512-10, {size} bytes;"
          f" batch {BATCH}; {os.cpu_count()} CPUs; medians of {args.repeats}")
    print("| measure | value |\n| --- | --- |")
    print(f"| first runtime.load (fresh process, empty cache) | {1e3 * first:.1f} ms |")
    print(f"| second runtime.load (fresh process, warm cache) | {1e3 * second:.1f} ms |")
    print(f"| cold-start speedup (first / second) | {first / second:.1f}x |")
    print(f"| Session.run, 1 thread | {one:.0f} runs/s |")
    print(f"| Session.run, 2 threads | {two:.0f} runs/s |")
    print(f"| thread scaling (2 / 1) | {two / one:.2f}x |")
    print(json.dumps({"first_load_s": first, "second_load_s": second,
                      "speedup": first / second, "runs_per_s_1": one, "runs_per_s_2": two,
                      "scaling": two / one}))


if __name__ == "__main__":
    main()
