"""Winograd F(2x2, 3x3) (``modelc.passes.winograd_convs``) against the conv kernels, per
layer, on one thread, in one run.

    .venv/bin/python bench/winograd.py [--rounds 7] [--only resnet18]

For each dense 3x3 stride-1 conv shape of ResNet-18, ddddocr det and NudeNet 320n (batch 1,
padding 1, bias and ReLU), one single-conv model is compiled twice, with the pass off (the
conv kernel ``pack_im2col.runs_as_gemm`` picks) and on whatever the channels. Beside them
run three more models: the input transform alone and the output transform alone (their
sum over the Winograd time is ``xform``, the transforms' share), and ``f32_linear`` on the
conv's implicit-gemm shape (OH * OW, 9 * cin) x (cout, 9 * cin). All run in interleaved
rounds on the calling thread, each timed in thread CPU time (``time.thread_time``: the
machine is shared); printed are the medians of the times and of the per-round ratios
winograd / conv and ``rate`` = linear / winograd, the conv's effective rate (direct-conv
FLOPs over time) over the linear kernel's on the same FLOPs. Last, F(4x4, 3x3) (``wino4``):
its time, its ratio to the conv and its largest difference from the conv relative to the
output's largest magnitude.

``--cold`` times each call after writing ``COLD_BYTES`` of host memory, so that the call
finds its weight and input in memory rather than in cache, as a conv does in a model (one
call per round then, ``--rounds`` of them: 21 or more).
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


def _compile(model: Module, x: np.ndarray, winograd: bool, tile4: bool = False) -> bytes:
    """The export with the pass off, or on for every conv it covers (no channel minimum),
    with F(2x2, 3x3) or (``tile4``) F(4x4, 3x3)."""
    saved = PASS.MIN_CHANNELS, PASS.tile
    PASS.MIN_CHANNELS = 1
    PASS.tile = lambda oh, ow: 4 if tile4 else 2  # type: ignore[assignment]
    try:
        return modelc.export(model, (x,), winograd=winograd)
    finally:
        PASS.MIN_CHANNELS, PASS.tile = saved


COLD_BYTES = 96 << 20
"""Bytes written between calls with ``--cold``: more than the caches hold."""


def _timed(run: Callable[[], object], calls: int, flush: np.ndarray | None = None) -> float:
    """Thread CPU seconds per call of ``run``: the mean over ``calls``, or with ``flush`` one
    call after writing all of it (the caches left cold)."""
    if flush is not None:
        flush += 1.0
        calls = 1
    start = time.thread_time()
    for _ in range(calls):
        run()
    return (time.thread_time() - start) / calls


class _Lambda(Module):
    def __init__(self, forward: Callable[..., np.ndarray]) -> None:
        super().__init__()
        self._forward = forward

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self._forward(x)


def _models(cin: int, cout: int, hw: int) -> list[tuple[bytes, np.ndarray]]:
    """(wasm, input) of: the conv, Winograd, the input and output transforms alone, and
    the linear of the conv's implicit-gemm shape."""
    rng = np.random.default_rng(1)
    model, tiles = _Conv(cin, cout), -(-hw // 2)
    count = PASS.plane_length(tiles * tiles, (cin, cout))
    x = rng.standard_normal((1, cin, hw, hw)).astype(np.float32)
    m = rng.standard_normal((1, 16 * cout, 1, count)).astype(np.float32)
    a = rng.standard_normal((hw * hw, 9 * cin)).astype(np.float32)
    w = (rng.standard_normal((cout, 9 * cin)) / (3 * cin ** 0.5)).astype(np.float32)
    pieces = [
        (_Lambda(lambda v: F.winograd_input(v, (1, 1), (tiles, tiles), count)), x),
        (_Lambda(lambda v: F.relu(F.winograd_output(v, model.bias, 1, (hw, hw)))), m),
        (_Lambda(lambda v: F.linear(v, w)), a)]
    return ([(_compile(model, x, False), x), (_compile(model, x, True), x)]
            + [(modelc.export(piece, (v,)), v) for piece, v in pieces]
            + [(_compile(model, x, True, tile4=True), x)])


def _layer(name: str, cin: int, cout: int, hw: int, rounds: int,
           flush: np.ndarray | None) -> None:
    built = _models(cin, cout, hw)
    sessions = [runtime.load(wasm) for wasm, _ in built]
    try:
        runs = [partial(s.run, {"input0": v}) for s, (_, v) in zip(sessions, built)]
        outs = [runs[k]()["output0"] for k in (0, 1, 5)]
        error = float(np.abs(outs[0] - outs[1]).max())
        error4 = float(np.abs(outs[0] - outs[2]).max() / np.abs(outs[0]).max())
        calls = max(1, int(0.05 / max(_timed(runs[0], 1), 1e-4)))
        times: list[list[float]] = [[] for _ in runs]
        for _ in range(rounds):
            for i, run in enumerate(runs):
                times[i].append(_timed(run, calls, flush))
        conv, wino, first, last, linear, wino4 = times
        ratio = statistics.median(w / c for c, w in zip(conv, wino))
        ratio4 = statistics.median(w / c for c, w in zip(conv, wino4))
        xform = statistics.median((f + t) / w for f, t, w in zip(first, last, wino))
        rate = statistics.median(li / w for li, w in zip(linear, wino))
        ms = [statistics.median(t) * 1e3 for t in times]
        print(f"{name:14} {cin:4} {cout:4} {hw:4} {ms[0]:8.3f} {ms[1]:8.3f} {ratio:9.3f} "
              f"{ms[2]:7.3f} {ms[3]:7.3f} {xform:6.1%} {ms[4]:8.3f} {rate:6.3f} "
              f"{ms[5]:8.3f} {ratio4:7.3f}  (max diff {error:.1e}, F4 {error4:.1e} of max)",
              flush=True)
    finally:
        for s in sessions:
            s.close()


def bench(rounds: int, only: str | None, cold: bool = False) -> None:
    flush = np.zeros(COLD_BYTES // 4, np.float32) if cold else None
    print(f"{'model':14} {'cin':>4} {'cout':>4} {'hw':>4} {'conv ms':>8} {'wino ms':>8} "
          f"{'wino/conv':>9} {'in ms':>7} {'out ms':>7} {'xform':>6} {'lin ms':>8} "
          f"{'rate':>6} {'wino4 ms':>8} {'w4/conv':>7}")
    for name, layers in LAYERS.items():
        if not only or name == only:
            for cin, cout, hw in layers:
                _layer(name, cin, cout, hw, rounds, flush)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", choices=sorted(LAYERS))
    parser.add_argument("--cold", action="store_true",
                        help="time each call with the caches cold (see the docstring)")
    args = parser.parse_args()
    bench(args.rounds, args.only, args.cold)


if __name__ == "__main__":
    main()
