"""A 1-D convolution in its three layouts, compiled by modelc and run end to end, in one
run: ``nn.Conv1d`` on (N, C, L), and the 2-D forms exporters pick for it, 1 x L (height 1)
and L x 1 (width 1). All three should run at one speed (the L x 1 form was 14x slower
before conv2d routed it to the 1 x L layout); torch's single-thread conv1d is the peer.

    .venv/bin/python bench/conv1d.py [--repeat 9]

Medians over ``--repeat`` session runs (inputs copied in and outputs out included) on a
shared, noisy machine; the contenders of a shape are timed in interleaved rounds and each
ratio is the median of per-round ratios. No result is asserted.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import modelc
import nn
import runtime
from nn import functional as F

# name: (channels in, channels out, length, kernel, stride)
SHAPES = {
    "bytes 128->128 k5 @1536": (128, 128, 1536, 5, 1),
    "audio 64->128 k3 s2 @4000": (64, 128, 4000, 3, 2),
    "wide 256->256 k9 @512": (256, 256, 512, 9, 1),
}


class Planar(nn.Module):
    """The same conv as a 2-D one over (N, C, H, W) = (1, C, L, 1) or (1, C, 1, L)."""

    def __init__(self, weight: np.ndarray, stride: int, tall: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight[:, :, :, None] if tall else weight[:, :, None, :])
        self.stride = (stride, 1) if tall else (1, stride)

    def forward(self, x):  # type: ignore[no-untyped-def]
        return F.conv2d(x, self.weight, stride=self.stride)


def _timer(session: runtime.Session, x: np.ndarray) -> Callable[[], float]:
    def once() -> float:
        start = time.perf_counter()
        session.run({"input0": x})
        return time.perf_counter() - start
    session.run({"input0": x})  # warm up
    return once


def _torch_timer(torch: Any, x: Any, weight: Any, stride: int) -> float:
    with torch.no_grad():
        start = time.perf_counter()
        torch.nn.functional.conv1d(x, weight, stride=stride)
        return time.perf_counter() - start


def bench(repeat: int) -> None:
    import torch  # an extra, only for the peer column

    torch.set_num_threads(1)
    print(f"1-D conv, ms per run (median of {repeat}); ratios to the 1 x L layout")
    print(f"{'shape':>28}{'conv1d':>9}{'1 x L':>9}{'L x 1':>9}{'torch-1t':>10}"
          f"{'conv1d/1xL':>12}{'Lx1/1xL':>10}{'1xL/torch':>11}")
    for name, (c, o, length, k, s) in SHAPES.items():
        rng = np.random.default_rng(0)
        weight = (rng.standard_normal((o, c, k)) / np.sqrt(c * k)).astype(np.float32)
        x = rng.standard_normal((1, c, length), np.float32)
        conv1d = nn.Conv1d(c, o, k, stride=s, bias=False)
        conv1d.weight = nn.Parameter(weight)
        models = {"conv1d": (conv1d, x), "1 x L": (Planar(weight, s, False), x[:, :, None, :]),
                  "L x 1": (Planar(weight, s, True), x[:, :, :, None])}
        timers = {}
        for label, (model, inputs) in models.items():
            session = runtime.load(modelc.export(model, (inputs,)))
            timers[label] = _timer(session, inputs)
        tx, tw = torch.from_numpy(x), torch.from_numpy(weight)
        timers["torch"] = functools.partial(_torch_timer, torch, tx, tw, s)
        rounds = [{label: timer() for label, timer in timers.items()} for _ in range(repeat)]
        ms = {label: statistics.median(r[label] for r in rounds) * 1e3 for label in timers}

        def ratio(a: str, b: str, rounds: list[dict[str, float]] = rounds) -> float:
            return statistics.median(r[a] / r[b] for r in rounds)

        print(f"{name:>28}{ms['conv1d']:>9.2f}{ms['1 x L']:>9.2f}{ms['L x 1']:>9.2f}"
              f"{ms['torch']:>10.2f}{ratio('conv1d', '1 x L'):>12.2f}"
              f"{ratio('L x 1', '1 x L'):>10.2f}{ratio('1 x L', 'torch'):>11.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    bench(parser.parse_args().repeat)
