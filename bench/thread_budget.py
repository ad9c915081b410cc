"""Where a model's 2-thread time goes (issue #13), measured so that other jobs on the machine
do not distort it: CPU time per thread, and the kernel calls' own shapes.

    .venv/bin/python bench/thread_budget.py [--model minilm-b1] [--runs 7] [--threads 2]

- *serial fraction*: each graph node's time in situ on one thread (``op_profile.py``: the
  calling thread's CPU time, private memory) split by whether its kernel calls go parallel,
  decided from the call's own arguments by the split table and thresholds the stand-ins use
  (``wasm_kernels.parallel.splits``); with the parts' balance (each part's units, taken by
  whichever thread is free) and the dispatch rounds per inference;
- *one-core cost of the shared memory*: the calling thread's CPU time of the threaded
  session's merged model with the stand-ins told the team is 1 (every kernel runs on the
  caller) over that of a ``threads=1`` session, in interleaved rounds;
- *work at N threads*: the CPU time of the caller and of each worker per inference
  (``pthread_getcpuclockid``), beside the wall time (which the load distorts);
- the Amdahl estimate: ``T1 * (shared * serial + inflation * shared * parallel * balance /
  N) + rounds * dispatch``, where ``inflation`` is what the parallel parts cost in CPU time
  at N threads over one core (re-read weights, repeated packing), from the two above.

Medians over ``--runs``; the load average is printed beside them; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import op_profile
import peers

import modelc
import runtime
from modelc import codegen
from wasm_kernels import abi, parallel

DISPATCH_US = 12.0
"""A dispatch round trip to a parked worker (issue #13's measurement), for the estimate."""


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _makespan(units: list[int], threads: int) -> int:
    """Units done by the busiest thread when ``threads`` take parts in order as each is free
    (every unit costing the same)."""
    busy = [0] * threads
    for size in units:
        busy[busy.index(min(busy))] += size
    return max(busy)


def _parts(split: parallel.Split, count: int, threads: int, few: bool = False) -> list[int]:
    """The units of each part a stand-in cuts ``count`` into (as ``parallel_parts._bound``), with
    one part a thread when ``few``."""
    parts = threads * (1 if few else parallel.CHUNKS_PER_THREAD)
    tiles = -(-count // split.grain)
    base, rest = divmod(tiles, parts)
    bounds = [min(count, (p * base + max(0, p - (parts - rest))) * split.grain)
              for p in range(parts + 1)]
    return [hi - lo for lo, hi in zip(bounds, bounds[1:]) if hi > lo]


def calls(records: list[tuple[Any, ...]], isa: str, threads: int
          ) -> list[tuple[str, bool, float]]:
    """Each kernel call in ``records``: (kernel, whether it goes parallel at ``threads``, its
    balance: the busiest thread's units over an even share)."""
    table = parallel.splits(isa)
    stack: list[int | None] = []
    out = []
    for record in records:
        if record[0] == "i32.const":
            stack.append(record[1])
        elif record[0] == "kernel":
            spec = abi.BY_NAME[record[1]]
            args = dict(zip((p.split(":")[0] for p in spec.params),
                            stack[len(stack) - len(spec.params):]))
            del stack[len(stack) - len(spec.params):]
            split = table.get(spec.name)
            if split is None or args[split.count] is None:
                out.append((spec.name, False, 1.0))
                continue
            count = args[split.count]
            assert count is not None
            work = count
            for factor in split.work:
                work *= args[factor] or 0
            goes = work >= split.threshold and all(args[p] == v for p, v in split.only.items())
            few = split.one_part_when is not None and (
                (args[split.one_part_when[0]] or 0) > (args[split.one_part_when[1]] or 0))
            units = _parts(split, count, threads, few)
            out.append((spec.name, goes, _makespan(units, threads) * threads / count))
        elif record[0] in ("weight", "arena", "f32.const", "local.get"):
            stack.append(None)
    return out


def _session_runs(wasm: bytes, inputs: dict[str, Any], threads: int
                  ) -> dict[str, Callable[[], dict[str, float]]]:
    """Callables running one inference and returning its times (ms): ``one`` a threads=1
    session (caller CPU), ``merged1`` the threaded session with its team told it is 1
    (caller CPU), ``team`` the threaded session (caller CPU, workers' CPU, wall)."""
    single = runtime.load(wasm, threads=1, instances=1)
    team_session = runtime.load(wasm, threads=threads, instances=1)
    alone = runtime.load(wasm, threads=threads, instances=1)
    # NOTE: the sessions' own instance and team, reached through private attributes: a
    # measurement of the runtime's internals, not an API.
    team = team_session._pool._idle[0]._team
    told = alone._pool._idle[0]._team
    assert team is not None and told is not None, "the model did not merge"
    told._main.call(told._reset, told._main.store, 1, 0)  # stand-ins run every kernel alone
    clocks = [time.pthread_getcpuclockid(t.ident or 0) for t in team._threads]

    def caller(session: runtime.Session) -> Callable[[], dict[str, float]]:
        def run() -> dict[str, float]:
            start = time.thread_time()
            session.run(inputs)
            return {"caller": 1e3 * (time.thread_time() - start)}
        return run

    def together() -> dict[str, float]:
        workers = [time.clock_gettime(c) for c in clocks]
        wall, start = time.perf_counter(), time.thread_time()
        team_session.run(inputs)
        out = {"caller": 1e3 * (time.thread_time() - start),
               "wall": 1e3 * (time.perf_counter() - wall)}
        out["workers"] = 1e3 * sum(time.clock_gettime(c) - w for c, w in zip(clocks, workers))
        return out

    return {"one": caller(single), "merged1": caller(alone), "team": together}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-b1", choices=sorted(peers.MODELS))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    spec = peers.MODELS[args.model]
    inputs = spec.inputs()
    reference = None if spec.kind == "minilm" else peers.torch_model(spec.kind)
    traced = modelc.trace(peers.nn_model(spec.kind, reference), inputs)
    wasm = modelc.export(traced, None)
    graph = modelc.optimize(modelc.trace(peers.nn_model(spec.kind, reference), inputs))
    print(f"{args.model}, {args.threads} threads (load {_load()})")
    _, in_situ, _ = op_profile.profile(graph, inputs, "relaxed", args.runs)
    ctx, _ = codegen.lower(graph)
    serial = par = balanced = 0.0
    rounds = 0
    rows: dict[str, list[float]] = {}
    for node, seconds, (lo, hi) in zip(graph.nodes, in_situ, op_profile.node_spans(graph)):
        seconds = max(seconds, 0.0)
        node_calls = calls(ctx.records[lo:hi], "relaxed", args.threads)
        going = [c for c in node_calls if c[1]]
        rounds += len(going)
        if going:
            par += seconds
            balanced += seconds * max(b for _, _, b in going)
        else:
            serial += seconds
            row = rows.setdefault(op_profile.label(node), [0, 0.0])
            row[0] += 1
            row[1] += seconds
    total = serial + par
    balance = balanced / par if par else 1.0
    print(f"  nodes in situ {1e3 * total:.1f} ms: serial {100 * serial / total:.1f}%, parallel "
          f"{100 * par / total:.1f}% (balance {balance:.3f}), {rounds} dispatch rounds")
    for label, (count, seconds) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:8]:
        print(f"    serial: {label:<40}{count:>4} nodes {1e3 * seconds:8.2f} ms "
              f"{100 * seconds / total:5.1f}%")
    contenders = _session_runs(wasm, inputs, args.threads)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in contenders}
    for round_ in range(args.runs + 1):
        for name, run in contenders.items():
            sample = run()
            if round_:
                samples[name].append(sample)

    def med(name: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[name])

    one, merged1 = med("one", "caller"), med("merged1", "caller")
    shared = statistics.median(m["caller"] / o["caller"]
                               for m, o in zip(samples["merged1"], samples["one"]))
    work = statistics.median(t["caller"] + t["workers"] for t in samples["team"])
    s, p = serial / total, par / total
    inflation = max((work / merged1 - s) / p, 1.0) if p else 1.0
    estimate = (one * shared * (s + inflation * p * balance / args.threads)
                + rounds * DISPATCH_US / 1e3)
    print(f"  CPU ms per inference (load {_load()}): threads=1 {one:.1f}; merged, team of 1 "
          f"{merged1:.1f} ({shared:.3f}x); {args.threads} threads: caller "
          f"{med('team', 'caller'):.1f} + workers {med('team', 'workers'):.1f} = {work:.1f} "
          f"({work / merged1:.3f}x of one core; parallel parts {inflation:.3f}x); "
          f"wall {med('team', 'wall'):.1f}")
    print(f"  Amdahl: {estimate:.1f} ms at {args.threads} threads, {one / estimate:.2f}x over "
          f"threads=1 (one core's shared memory {shared:.2f}x, serial {100 * s:.1f}%, "
          f"balance {balance:.3f}, parallel inflation {inflation:.3f}x, dispatch "
          f"{rounds * DISPATCH_US / 1e3:.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
