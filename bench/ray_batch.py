"""wasmnn on Ray Data: rows/s with 1 and 2 actors, against ``Session.run`` in a loop.

    .venv/bin/python bench/ray_batch.py [--rows 200000] [--batch 64] [--repeat 3]

The model is the bench MLP (784-512-512-10, ``bench/models.py``) with a symbolic batch.
``loop`` calls ``Session.run`` on batches of ``--batch`` rows in this process (the floor:
no Ray). ``ray xN`` maps the same rows with N actors on a local cluster of 2 CPUs, the data
already in the object store, and times the job from submission to the last row collected;
the per-row overhead is ``1 - loop_rate / ray_x1_rate``. Medians of ``--repeat`` runs; the
machine is shared, so compare ratios within one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import models
    import ray

    import modelc
    import nn
    import runtime
    from runtime import ray_data

    folder = Path(tempfile.mkdtemp())
    path = folder / "mlp.wasm"
    modelc.export(getattr(models, "mlp")(nn).eval(), {"x": np.zeros((1, 784), np.float32)},
                  path, dynamic={"x": {0: ("batch", 1, args.batch)}})
    x = np.random.default_rng(0).standard_normal((args.rows, 784)).astype(np.float32)
    np.save(folder / "x.npy", x)

    with runtime.load(path, instances=1) as session:
        def loop() -> None:
            for i in range(0, args.rows, args.batch):
                session.run({"x": x[i:i + args.batch]})
        rates = {"loop": _rate(loop, args.rows, args.repeat)}

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    payload = ray_data.ModelPayload.from_file(path)
    data = ray_data.read_inputs({"x": str(folder / "x.npy")}, rows_per_block=4096).materialize()
    for actors in (1, 2):
        def job(actors: int = actors) -> None:
            scored = ray_data.map_model(data, payload, concurrency=actors,
                                        batch_size=args.batch)
            assert scored.count() == args.rows
        rates[f"ray x{actors}"] = _rate(job, args.rows, args.repeat)
    ray.shutdown()
    print(f"{args.rows} rows of 784 floats, batch {args.batch}; median rows/s of "
          f"{args.repeat} runs")
    for name, rate in rates.items():
        print(f"  {name:<8} {rate:>10.0f} rows/s  {rate / rates['loop']:.2f}x the loop")
    print(f"  2 actors / 1 actor: {rates['ray x2'] / rates['ray x1']:.2f}x; per-row overhead "
          f"of one actor against the loop: {1 - rates['ray x1'] / rates['loop']:.1%}")
    return 0


def _rate(job, rows: int, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    return rows / statistics.median(times)


if __name__ == "__main__":
    sys.exit(main())
