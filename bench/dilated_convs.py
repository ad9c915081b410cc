"""Dilated 3x3 convs: the direct conv against the default pipeline, the regions or phases
(``trim_dilated_convs``, ``phase_dilated_convs``), and Winograd over the dilated plane
(``winograd_convs.dilated_tile``'s transforms) with F(2x2) and F(4x4), per dilation, on one
thread, in one run.

    .venv/bin/python bench/dilated_convs.py [--rounds 7]

For CRAFT's refiner's ASPP convs (64 -> 128 channels at 64x64, dilation and padding 6, 12,
18, 24, bias and ReLU), one single-conv model is compiled five times: Winograd off (the
direct dilated conv), the default pipeline, the dilated transforms off (the regions where
``SHARE`` lets ``trim_dilated_convs`` take the conv, else phases where ``COVER`` lets the
phases take it, else the direct conv again), and the dilated transforms with each tile
forced. All run in interleaved rounds on the calling thread, each timed in thread CPU time;
printed are the direct conv's median time, the medians of the per-round ratios to it and
the largest difference from it relative to the output's largest magnitude. No result is
asserted.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from functools import partial

import numpy as np

import modelc
import runtime
from nn import Module
from nn import functional as F

WINO = importlib.import_module("modelc.passes.winograd_convs")

# (cin, cout, height = width, dilation) of CRAFT's refiner's ASPP convs
LAYERS = [(64, 128, 64, 6), (64, 128, 64, 12), (64, 128, 64, 18), (64, 128, 64, 24)]


class _Conv(Module):
    def __init__(self, cin: int, cout: int, dilation: int) -> None:
        super().__init__()
        rng = np.random.default_rng(0)
        self.weight = (rng.standard_normal((cout, cin, 3, 3)) / (3 * cin ** 0.5)).astype(
            np.float32)
        self.bias = rng.standard_normal(cout).astype(np.float32)
        self.dilation = dilation

    def forward(self, x: np.ndarray) -> np.ndarray:
        return F.relu(F.conv2d(x, self.weight, self.bias, padding=self.dilation,
                               dilation=self.dilation))


def _exports(model: Module, x: np.ndarray) -> list[bytes]:
    """Winograd off, the default pipeline, the regions or phases (dilated Winograd off), and
    dilated Winograd F(2x2) and F(4x4) forced."""
    wasms = [modelc.export(model, (x,), winograd=False), modelc.export(model, (x,))]
    saved = WINO.DILATED, WINO.dilated_tile
    try:
        WINO.DILATED = False
        wasms.append(modelc.export(model, (x,)))
        for m in (2, 4):
            WINO.dilated_tile = lambda node, m=m: m  # type: ignore[assignment]
            wasms.append(modelc.export(model, (x,)))
    finally:
        WINO.DILATED, WINO.dilated_tile = saved
    return wasms


def _timed(run: partial, calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        run()
    return (time.thread_time() - start) / calls


def bench(rounds: int) -> None:
    print(f"{'cin':>4} {'cout':>4} {'hw':>4} {'dil':>4} {'direct ms':>9} {'default':>8} "
          f"{'trim/phases':>11} {'dilated F2':>10} {'dilated F4':>10}  max diff of max"
          "   (x direct)")
    for cin, cout, hw, dilation in LAYERS:
        x = np.random.default_rng(1).standard_normal((1, cin, hw, hw)).astype(np.float32)
        sessions = [runtime.load(wasm) for wasm in _exports(_Conv(cin, cout, dilation), x)]
        try:
            runs = [partial(s.run, {"input0": x}) for s in sessions]
            outs = [run()["output0"] for run in runs]
            diff = max(float(np.abs(o - outs[0]).max()) for o in outs) / float(
                np.abs(outs[0]).max())
            calls = max(1, int(0.05 / max(_timed(runs[0], 1), 1e-4)))
            times: list[list[float]] = [[] for _ in runs]
            for _ in range(rounds):
                for i, run in enumerate(runs):
                    times[i].append(_timed(run, calls))
            ms = [statistics.median(t) * 1e3 for t in times]
            ratios = [statistics.median(b / a for a, b in zip(times[0], t)) for t in times[1:]]
            print(f"{cin:4} {cout:4} {hw:4} {dilation:4} {ms[0]:9.3f} {ratios[0]:8.3f} "
                  f"{ratios[1]:11.3f} {ratios[2]:10.3f} {ratios[3]:10.3f}  {diff:.1e}",
                  flush=True)
        finally:
            for s in sessions:
                s.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    bench(parser.parse_args().rounds)


if __name__ == "__main__":
    main()
