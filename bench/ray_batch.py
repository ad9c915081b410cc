"""wasmnn on Ray Data: rows/s with 1 and 2 actors, against ``Session.run`` in a loop, with
each job's start-up separated from its steady rate.

    .venv/bin/python bench/ray_batch.py [--rows 100000] [--batch 64] [--ray-batch 1024]
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
and a long one by the steady rate. Medians of ``--repeat`` jobs. The machine may be shared:
compare ratios within one run, and quote ``uptime``'s load beside them. ``--address`` runs
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=64, help="rows per Session.run")
    parser.add_argument("--ray-batch", type=int, default=1024,
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
    modelc.export(getattr(models, "mlp")(nn).eval(), {"x": np.zeros((1, 784), np.float32)},
                  path, dynamic={"x": {0: ("batch", 1, args.batch)}})
    x = np.random.default_rng(0).standard_normal((args.rows, 784)).astype(np.float32)
    np.save(folder / "x.npy", x)

    with runtime.load(path, instances=1) as session:
        runner = BatchRunner(session)

        def loop() -> None:
            for i in range(0, args.rows, args.batch):
                session.run({"x": x[i:i + args.batch]})

        def run_batches() -> None:
            for i in range(0, args.rows, args.ray_batch):
                runner({"x": x[i:i + args.ray_batch]})

        rates = {"loop": _rate(loop, args.rows, args.repeat),
                 "runner": _rate(run_batches, args.rows, args.repeat)}

    if args.address:
        ray_data.init(address=args.address, log_to_driver=False)
    else:
        ray_data.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    payload = ray_data.ModelPayload.from_file(path)
    data = ray_data.read_inputs({"x": str(folder / "x.npy")},
                                rows_per_block=BLOCK_ROWS).materialize()
    jobs = {}
    for actors in (1, 2):
        short_rows = min(args.rows // 2, BLOCK_ROWS * actors)
        short = ray_data.read_inputs({"x": str(folder / "x.npy")},
                                     rows_per_block=BLOCK_ROWS).limit(short_rows).materialize()

        def job(dataset: Any, rows: int, actors: int = actors) -> Callable[[], None]:
            return lambda: _drain(ray_data.map_model(dataset, payload, concurrency=actors,
                                                     batch_size=args.ray_batch), rows)
        jobs[actors] = _jobs(job(short, short_rows), short_rows, job(data, args.rows),
                             args.rows, args.repeat)
    ray.shutdown()
    _report(args, rates, jobs)
    return 0


def _rate(job: Callable[[], None], rows: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    return rows / statistics.median(times)


def _drain(scored: Any, rows: int) -> None:
    seen = sum(len(block["error"]) for block in
               scored.iter_batches(batch_size=None, batch_format="numpy"))
    if seen != rows:
        raise RuntimeError(f"the job returned {seen} rows, expected {rows}")


def _jobs(short: Callable[[], None], short_rows: int, long: Callable[[], None],
          long_rows: int, repeat: int) -> dict[str, float]:
    """Steady rate (rows/s), start-up (s) and total rate (rows/s) of the long job: medians
    over ``repeat`` pairs of a short and a long job, timed in turn."""
    runs = []
    for _ in range(repeat):
        times = []
        for job in (short, long):
            start = time.perf_counter()
            job()
            times.append(time.perf_counter() - start)
        steady = (long_rows - short_rows) / max(times[1] - times[0], 1e-9)
        runs.append((steady, times[0] - short_rows / steady, long_rows / times[1]))
    steady, startup, total = (statistics.median(r[i] for r in runs) for i in range(3))
    return {"startup": startup, "steady": steady, "total": total}


def _report(args: argparse.Namespace, rates: dict[str, float],
            jobs: dict[int, dict[str, float]]) -> None:
    loop = rates["loop"]
    print(f"{args.rows} rows of 784 floats; Session.run on {args.batch} rows, actors called "
          f"on {args.ray_batch}; medians of {args.repeat}; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"  loop     {loop:>8.0f} rows/s")
    print(f"  runner   {rates['runner']:>8.0f} rows/s  {rates['runner'] / loop:.2f}x the loop")
    for actors, job in jobs.items():
        print(f"  ray x{actors}   steady {job['steady']:>7.0f} rows/s "
              f"({job['steady'] / loop:.2f}x the loop), start-up {job['startup']:.1f} s, "
              f"total {job['total']:.0f} rows/s ({job['total'] / loop:.2f}x)")
    one, two = jobs[1], jobs[2]
    print(f"  2 actors / 1 actor: steady {two['steady'] / one['steady']:.2f}x, total "
          f"{two['total'] / one['total']:.2f}x; one actor's steady per-row overhead against "
          f"the loop: {1 - one['steady'] / loop:.1%}")


if __name__ == "__main__":
    sys.exit(main())
