"""Winograd F(2x2, 3x3) (``modelc.passes.winograd_convs``) against the conv kernels, per
layer, on one thread, in one run.

    .venv/bin/python bench/winograd.py [--rounds 7] [--only resnet18]

For each dense 3x3 stride-1 conv shape of ResNet-18, ddddocr det and NudeNet 320n (batch 1,
padding 1, bias and ReLU), one single-conv model is compiled twice, with the pass off (the
conv kernel ``pack_im2col.runs_as_gemm`` picks) and on whatever the channels; both run in
interleaved rounds on the calling thread, each timed in thread CPU time
(``time.thread_time``: the machine is shared), and the median of the per-round ratios
winograd / conv is printed with both times.
No result is asserted.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np

import modelc
import runtime
from nn import Module
from nn import functional as F

PASS = importlib.import_module("modelc.passes.winograd_convs")

# model: (cin, cout, height = width) of its dense 3x3 stride-1 convs
LAYERS = {
    "resnet18": [(64, 64, 56), (128, 128, 28), (256, 256, 14), (512, 512, 7)],
    "ddddocr_det": [(24, 24, 104), (48, 48, 52), (96, 96, 26), (192, 192, 13)],
    "nudenet_320n": [(16, 16, 80), (32, 32, 40), (64, 64, 20), (128, 128, 10)],
}


class _Conv(Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        rng = np.random.default_rng(0)
        self.weight = (rng.standard_normal((cout, cin, 3, 3)) / (3 * cin ** 0.5)).astype(
            np.float32)
        self.bias = rng.standard_normal(cout).astype(np.float32)

    def forward(self, x: np.ndarray) -> np.ndarray:
        return F.relu(F.conv2d(x, self.weight, self.bias, padding=1))


def _compile(model: Module, x: np.ndarray, winograd: bool) -> bytes:
    """The export with the pass off, or on for every conv it covers (no channel minimum)."""
    saved = PASS.ENABLED, PASS.MIN_CHANNELS
    PASS.ENABLED, PASS.MIN_CHANNELS = winograd, 1
    try:
        return modelc.export(model, (x,))
    finally:
        PASS.ENABLED, PASS.MIN_CHANNELS = saved


def _timed(run: Callable[[], object], calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        run()
    return (time.thread_time() - start) / calls


def _layer(name: str, cin: int, cout: int, hw: int, rounds: int) -> None:
    model = _Conv(cin, cout)
    x = np.random.default_rng(1).standard_normal((1, cin, hw, hw)).astype(np.float32)
    sessions = [runtime.load(_compile(model, x, w)) for w in (False, True)]
    try:
        runs = [partial(s.run, {"input0": x}) for s in sessions]
        outs = [run()["output0"] for run in runs]
        error = float(np.abs(outs[0] - outs[1]).max())
        calls = max(1, int(0.05 / max(_timed(runs[0], 1), 1e-4)))
        times: list[list[float]] = [[], []]
        for _ in range(rounds):
            for i, run in enumerate(runs):
                times[i].append(_timed(run, calls))
        ratio = statistics.median(w / c for c, w in zip(*times))
        conv, wino = (statistics.median(t) * 1e3 for t in times)
        print(f"{name:14} {cin:4} {cout:4} {hw:4} {conv:8.3f} {wino:8.3f} "
              f"{ratio:9.3f}  (max diff {error:.1e})", flush=True)
    finally:
        for s in sessions:
            s.close()


def bench(rounds: int, only: str | None) -> None:
    print(f"{'model':14} {'cin':>4} {'cout':>4} {'hw':>4} {'conv ms':>8} {'wino ms':>8} "
          f"{'wino/conv':>9}")
    for name, layers in LAYERS.items():
        if not only or name == only:
            for cin, cout, hw in layers:
                _layer(name, cin, cout, hw, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", choices=sorted(LAYERS))
    args = parser.parse_args()
    bench(args.rounds, args.only)


if __name__ == "__main__":
    main()
