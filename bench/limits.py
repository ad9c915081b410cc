"""What the sandbox's limits cost: one model run with no limit, with ``timeout`` (epoch
interruption) and with ``fuel``, in one process, alternating rounds.

    .venv/bin/python bench/limits.py [--models minilm-b1,resnet18,mlp] [--rounds 15]

Each model (a ``bench/peers.py`` name) is exported once through ``nn``; three sessions load
it (one instance, one thread) and run the same inputs in turn each round, timed in the
thread's CPU time. Prints each session's median and, per limit, the median of the per-round
ratios to the unlimited run (issue #12's target: within 1.10). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import numpy as np  # noqa: E402
import peers  # noqa: E402

import modelc  # noqa: E402
import runtime  # noqa: E402

LIMITS = {"none": {}, "timeout": {"timeout": 600.0}, "fuel": {"fuel": 10**15}}


def measure(name: str, rounds: int, workdir: Path) -> dict[str, list[float]]:
    """Seconds of thread CPU time per round for each entry of ``LIMITS``."""
    spec = peers.MODELS[name]
    inputs = spec.inputs()
    path = workdir / f"{name}.wasm"
    modelc.export(peers.nn_model(spec.kind, peers.torch_model(spec.kind)), inputs, path)
    sessions = {limit: runtime.load(path, instances=1, threads=1, **kwargs)
                for limit, kwargs in LIMITS.items()}
    reference = sessions["none"].run(inputs)
    for limit, session in sessions.items():
        for key, value in session.run(inputs).items():
            np.testing.assert_array_equal(value, reference[key], err_msg=f"{name} {limit}")
    times: dict[str, list[float]] = {limit: [] for limit in sessions}
    for _ in range(rounds):
        for limit, session in sessions.items():
            start = time.thread_time()
            session.run(inputs)
            times[limit].append(time.thread_time() - start)
    for session in sessions.values():
        session.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="minilm-b1,resnet18,mlp",
                        help=f"comma-separated, from {sorted(peers.MODELS)}")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'model':<14}{'limit':<9}{'median ms':>10}{'min ms':>9}{'x none':>8}")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.models.split(","):
            times = measure(name, args.rounds, Path(folder))
            for limit, values in times.items():
                ratio = statistics.median(a / b for a, b in zip(values, times["none"]))
                print(f"{name:<14}{limit:<9}{statistics.median(values) * 1e3:>10.2f}"
                      f"{min(values) * 1e3:>9.2f}{ratio:>8.3f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
