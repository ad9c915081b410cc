"""wasmnn on Ray Data: rows/s with 1 and 2 actors, against ``Session.run`` in a loop, with
each job's start-up separated from its steady rate.

    .venv/bin/python bench/ray_batch.py [--rows 100000] [--batch 64] [--ray-batch 4096]
                                        [--repeat 3] [--address ADDRESS]

The model is the bench MLP (784-512-512-10, ``bench/models.py``) with a symbolic batch of
at most ``--batch`` rows. ``loop`` calls ``Session.run`` on ``--batch`` rows at a time in
this process (the floor: no Ray); ``runner`` is ``BatchRunner`` on ``--ray-batch`` rows at a
time, still without Ray (what an actor does per batch). ``ray xN`` maps the same rows with
N actors (the data already in the object store, blocks of 4096 rows, ``--ray-batch`` rows
handed to an actor per call, which the runner cuts into ``--batch``-row runs), as a job over
all the rows and a job over one block per actor. A job's time is taken as start-up plus rows
over the steady rate, and the two jobs give both:

- ``steady``: (rows of the long job - rows of the short) / (the difference of their times);
- ``start-up``: the short job's time less its rows at the steady rate: starting the actor
  processes, shipping and loading the model, and Ray Data's own set-up;
- ``total``: all rows over the whole long job, start-up included.

Ray Data starts new actors for every job, so a job over few rows is dominated by start-up
and a long one by the steady rate. Each of ``--repeat`` rounds times every contender once
(loop, runner, then the short and long job of 1 and 2 actors), so a burst of load from
other jobs slows a whole round; figures are medians over rounds and ratios are taken within a
round. On a shared machine quote ``uptime``'s load beside them. ``--address`` runs
the jobs on an existing cluster (``ray.init(address=...)``; ``auto`` for the local one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
BLOCK_ROWS = 4096
ACTORS = (1, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=64, help="rows per Session.run")
    parser.add_argument("--ray-batch", type=int, default=4096,
                        help="rows per call of an actor (map_batches' batch_size)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--address", default=None)
    args = parser.parse_args()
    import models
    import ray

    import modelc
    import nn
    import runtime
    from runtime import ray_data
    from runtime.batch import BatchRunner

    folder = Path(tempfile.mkdtemp())
    path = folder / "mlp.wasm"
    modelc.export(models.mlp(nn).eval(), {"x": np.zeros((1, 784), np.float32)},
                  path, dynamic={"x": {0: ("batch", 1, args.batch)}})
    x = np.random.default_rng(0).standard_normal((args.rows, 784)).astype(np.float32)
    np.save(folder / "x.npy", x)

    if args.address:
        ray_data.init(address=args.address, log_to_driver=False)
    else:
        ray_data.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    payload = ray_data.ModelPayload.from_file(path)
    blocks = ray_data.read_inputs({"x": str(folder / "x.npy")}, rows_per_block=BLOCK_ROWS)
    data = blocks.materialize()
    shorts = {n: min(args.rows // 2, BLOCK_ROWS * n) for n in ACTORS}
    short = {n: blocks.limit(rows).materialize() for n, rows in shorts.items()}
    rounds = []
    with runtime.load(path, instances=1) as session:
        runner = BatchRunner(session)
        for _ in range(args.repeat):
            # NOTE: every contender once per round, so a burst of load from other jobs slows
            # a whole round; ratios are taken within a round.
            seconds = {"loop": _time(lambda: [session.run({"x": x[i:i + args.batch]})
                                              for i in range(0, args.rows, args.batch)]),
                       "runner": _time(lambda: [runner({"x": x[i:i + args.ray_batch]})
                                                for i in range(0, args.rows, args.ray_batch)])}
            for n in ACTORS:
                for name, dataset, rows in ((f"short{n}", short[n], shorts[n]),
                                            (f"long{n}", data, args.rows)):
                    scored = ray_data.map_model(dataset, payload, concurrency=n,
                                                batch_size=args.ray_batch)
                    seconds[name] = _time(lambda s=scored, r=rows: _drain(s, r))
            rounds.append(_round(seconds, args.rows, shorts))
    ray.shutdown()
    _report(args, rounds)
    return 0


def _time(job: Callable[[], Any]) -> float:
    start = time.perf_counter()
    job()
    return time.perf_counter() - start


def _drain(scored: Any, rows: int) -> None:
    seen = sum(len(block["error"]) for block in
               scored.iter_batches(batch_size=None, batch_format="numpy"))
    if seen != rows:
        raise RuntimeError(f"the job returned {seen} rows, expected {rows}")


def _round(seconds: dict[str, float], rows: int, shorts: dict[int, int]) -> dict[str, float]:
    """One round's figures: rows/s of the loop and the runner; per actor count, the steady
    rate and total rate (rows/s) and the start-up (s), from its short and long job."""
    out = {"loop": rows / seconds["loop"], "runner": rows / seconds["runner"]}
    for n, short_rows in shorts.items():
        short, long = seconds[f"short{n}"], seconds[f"long{n}"]
        steady = (rows - short_rows) / max(long - short, 1e-9)
        out |= {f"steady{n}": steady, f"startup{n}": short - short_rows / steady,
                f"total{n}": rows / long}
    return out


def _report(args: argparse.Namespace, rounds: list[dict[str, float]]) -> None:
    def median(key: str) -> float:
        return statistics.median(r[key] for r in rounds)

    def ratio(key: str, base: str) -> float:
        return statistics.median(r[key] / r[base] for r in rounds)

    print(f"{args.rows} rows of 784 floats; Session.run on {args.batch} rows, actors called "
          f"on {args.ray_batch}; medians of {args.repeat} rounds (ratios within a round); "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  loop     {median('loop'):>8.0f} rows/s")
    print(f"  runner   {median('runner'):>8.0f} rows/s  {ratio('runner', 'loop'):.2f}x the loop")
    for n in ACTORS:
        print(f"  ray x{n}   steady {median(f'steady{n}'):>7.0f} rows/s "
              f"({ratio(f'steady{n}', 'loop'):.2f}x the loop), start-up "
              f"{median(f'startup{n}'):.1f} s, total {median(f'total{n}'):.0f} rows/s "
              f"({ratio(f'total{n}', 'loop'):.2f}x)")
    print(f"  2 actors / 1 actor: steady {ratio('steady2', 'steady1'):.2f}x, total "
          f"{ratio('total2', 'total1'):.2f}x")


if __name__ == "__main__":
    sys.exit(main())
