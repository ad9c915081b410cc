"""Intra-op threads (issue #13): what a shared memory costs the kernels on one thread, and
the 2-thread speedup of one kernel call by size, around the thresholds.

    .venv/bin/python bench/threads.py [--repeat 9] [--only shared,sizes,spin]

``shared``: ``f32_linear_bias`` and ``f32_gemm`` on BERT shapes, compiled and linked as a
session does on one thread (the dense kernels at opt level ``none`` in the module that owns
the memory) and as a threaded session's merged model holds them (in an engine with threads,
at ``runtime.threads.OPT_LEVEL``, defining a memory backed by the bytes the team shares:
``runtime.host_memory``), timed in interleaved rounds in the calling thread's CPU time; the
ratio is shared / private.

``sizes``: one-op models (``nn.Linear`` on M rows, ``tanh`` on n floats) run by sessions of 1
and 2 threads with the split thresholds at 0 (``wasm_kernels.parallel``), wall time per call
in interleaved rounds: where the 2-thread column passes 1.0x is where the threshold belongs.
The compiled-code cache is off for this process (the thresholds are compiled in).

``spin``: MiniLM b1 and ResNet-18 (``peers.py``'s) on a ``threads=1`` session and on 2-thread
sessions whose threads re-read the word they wait on ``runtime.threads.SPIN`` times before
sleeping (0: sleep at once), interleaved: wall time, speedup over one thread, and process CPU
time over wall time (2.0: both cores busy the whole call). Only a quiet machine says
anything here: a spinning thread takes a core another job wanted.

The machine is shared: medians of per-round ratios, with the load average printed beside
them; nothing is asserted.
"""

from __future__ import annotations

import os

os.environ["WASMNN_CACHE_DIR"] = "off"

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import modelc
import nn
import runtime
from runtime import threads as intra
from runtime.compartment import Compartment
from runtime.linker import RegistryResolver
from runtime.pool import link_kernels
from runtime.session import _kernel_wasm, compile_kernels
from wasm_kernels import abi, splits
from wasm_kernels.pack import pack_linear_weight

PAGE = 65536
SHAPES = ((128, 384, 384), (128, 384, 1536), (128, 1536, 384))
SPINS = (0, 20_000, 200_000)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _rounds(contenders: dict[str, Callable[[], object]], repeat: int,
            clock: Callable[[], float]) -> dict[str, list[float]]:
    """Each contender once per round, after a warm-up round."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for round_ in range(repeat + 1):
        for name, run in contenders.items():
            start = clock()
            run()
            if round_:
                times[name].append(clock() - start)
    return times


def _kernel_call(shared: bool, kernel: str, m: int, k: int, n: int) -> Callable[[], object]:
    """``kernel`` on (m, k, n) in a fresh compartment, linked as a session with (``shared``)
    or without threads links it."""
    compartment = Compartment(features=intra.FEATURES if shared else ())
    if shared:
        wasm = _kernel_wasm("relaxed", frozenset({kernel}), own_memory=True)
        compiled = (compartment.compile(wasm, intra.OPT_LEVEL),)
    else:
        compiled = compile_kernels(compartment, "relaxed", frozenset({kernel}))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    arrays = {"a": a, "b": b, "w": pack_linear_weight(b.T), "bias": np.zeros(n, np.float32),
              "c": np.zeros((m, n), np.float32), "ws": np.zeros((k, n), np.float32),
              "wa": np.zeros((m, k), np.float32)}
    names = [p.split(":")[0] for p in abi.BY_NAME[kernel].params]
    offsets, end = {}, 0
    for name in names:
        if name in arrays:
            offsets[name] = end
            end += -(-arrays[name].nbytes // 64) * 64
    pages = -(-end // PAGE) + 1
    registry = RegistryResolver()
    if shared:
        with intra.backed_by(intra.memory(compartment, pages)):
            exports, memory = link_kernels(compartment, compiled, pages, registry)
    else:
        exports, memory = link_kernels(compartment, compiled, pages, registry)
    store = compartment.store
    for name, offset in offsets.items():
        memory.write(store, np.ascontiguousarray(arrays[name]).tobytes(), offset)
    sizes = {"m": m, "k": k, "n": n}
    args = [offsets[name] if name in offsets else sizes[name] for name in names]
    fn = exports[kernel].extern
    return lambda: fn(store, *args)


def shared_cost(repeat: int) -> None:
    print(f"shared memory on one thread (load {_load()}): thread CPU ms, shared / private")
    for kernel in ("f32_linear_bias", "f32_gemm"):
        for m, k, n in SHAPES:
            times = _rounds({"private": _kernel_call(False, kernel, m, k, n),
                             "shared": _kernel_call(True, kernel, m, k, n)},
                            repeat, time.thread_time)
            ratio = statistics.median(s / p for s, p in zip(times["shared"], times["private"]))
            private, shared = (1e3 * statistics.median(times[name])
                               for name in ("private", "shared"))
            print(f"  {kernel:<16} {m}x{k}x{n:<6} private {private:7.2f}  shared {shared:7.2f}"
                  f"  {ratio:.2f}x")


def _op_models() -> list[tuple[str, nn.Module, np.ndarray]]:
    cases = []
    for m in (3, 6, 12, 24, 48, 96, 192):
        cases.append((f"linear {m}x256x256", nn.Sequential(nn.Linear(256, 256)).eval(),
                      np.ones((m, 256), np.float32)))
    for count in (1 << 12, 1 << 14, 1 << 16, 1 << 18):
        cases.append((f"tanh {count}", nn.Sequential(nn.Tanh()).eval(),
                      np.ones((1, count), np.float32)))
    return cases


def sizes(repeat: int) -> None:
    splits.DENSE_THRESHOLD = splits.STREAM_THRESHOLD = 0  # read by splits.splits()
    print(f"2 threads against 1 by size, thresholds 0 (load {_load()}): wall us per call")
    for label, model, x in _op_models():
        wasm = modelc.export(model, (x,))
        sessions = {t: runtime.load(wasm, threads=t, instances=1) for t in (1, 2)}
        times = _rounds({str(t): (lambda s=s, x=x: s.run(x)) for t, s in sessions.items()},
                        repeat, time.perf_counter)
        ratio = statistics.median(one / two for one, two in zip(times["1"], times["2"]))
        print(f"  {label:<20} 1t {1e6 * statistics.median(times['1']):9.1f}"
              f"  2t {1e6 * statistics.median(times['2']):9.1f}  speedup {ratio:.2f}x")
        for session in sessions.values():
            session.close()


def spin(repeat: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import peers

    print(f"2 threads by spin count (load {_load()}): wall ms, speedup over 1 thread, "
          "process CPU / wall")
    for name in ("minilm-b1", "resnet18"):
        spec = peers.MODELS[name]
        inputs = spec.inputs()
        reference = None if spec.kind == "minilm" else peers.torch_model(spec.kind)
        wasm = modelc.export(peers.nn_model(spec.kind, reference), inputs)
        sessions = {"1t": runtime.load(wasm, threads=1, instances=1)}
        for count in SPINS:
            intra.SPIN = count
            sessions[f"2t spin {count}"] = runtime.load(wasm, threads=2, instances=1)
        intra.SPIN = 0
        samples: dict[str, list[tuple[float, float]]] = {label: [] for label in sessions}
        for round_ in range(repeat + 1):
            for label, session in sessions.items():
                wall, cpu = time.perf_counter(), time.process_time()
                session.run(inputs)
                if round_:
                    samples[label].append((time.perf_counter() - wall,
                                           time.process_time() - cpu))
        print(f"  {name} (load {_load()})")
        for label, rows in samples.items():
            speedup = statistics.median(one[0] / own[0] for one, own in zip(samples["1t"], rows))
            wall = statistics.median(w for w, _ in rows)
            print(f"    {label:<16} {1e3 * wall:7.1f} ms  {speedup:.2f}x  CPU/wall "
                  f"{statistics.median(c / w for w, c in rows):.2f}")
        for session in sessions.values():
            session.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--only", default="shared,sizes")
    args = parser.parse_args()
    sections = {"shared": shared_cost, "sizes": sizes, "spin": spin}
    for name in args.only.split(","):
        if name not in sections:
            parser.error(f"unknown section {name!r}; available: {sorted(sections)}")
        sections[name](args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
