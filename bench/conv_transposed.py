"""A dense conv as the transposed product against the conv gemm, the whole layer, in one run.

    .venv/bin/python bench/conv_transposed.py [--repeat 9] [--only SUBSTRING]

The conv gemm (``f32_conv2d_gemm``, output channels as its rows) against the same layer
built from the kernels the integer conv already uses (``modelc/ops/qconv2d.py``): the NCHW
input transposed to channels-last (the strided ``f32_mul`` by 1.0, as ``permute`` and the
lowering move floats), its window rows (pixels, kh * kw * c) built by ``qu8_im2col`` on
4-byte taps (a padding tap is four zero bytes, 0.0), the ``f32_linear_bias`` product with
the weight as its packed (o, kh * kw * c) matrix (pixels as the rows), and the (pixels, o)
result transposed back to NCHW. Every step is timed in the layer (``tp``); ``lin`` is the
product alone. Both outputs are checked against each other. Shapes: ``kernels.CONV_SHAPES``
and ``kernels_conv.REAL_CONV_SHAPES`` plus the deep layers of open_nsfw and ResNet-50;
thread CPU time, interleaved rounds, median ratios (``kernels.py``'s rules).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import numpy as np
from kernels import CONV_SHAPES, Variant, interleaved_seconds, ratio
from kernels_conv import REAL_CONV_SHAPES, conv_call

import wasm_kernels
from wasm_kernels.pack import pack_linear_weight

DEEP_SHAPES = {
    "nsfw 3x3 256 @7": ((1, 256, 7, 7), 256, 3, 1, 1, 1),
    "nsfw 3x3 128 @14": ((1, 128, 14, 14), 128, 3, 1, 1, 1),
    "nsfw 3x3/2 128->256 @14": ((1, 128, 14, 14), 256, 3, 2, 1, 1),
    "r50 3x3 512 @7": ((1, 512, 7, 7), 512, 3, 1, 1, 1),
    "r50 1x1 2048->512 @7": ((1, 2048, 7, 7), 512, 1, 1, 0, 1),
    "r50 1x1 512->2048 @7": ((1, 512, 7, 7), 2048, 1, 1, 0, 1),
    "r50 1x1 1024->256 @14": ((1, 1024, 14, 14), 256, 1, 1, 0, 1),
    "few 3x3 32 @8": ((1, 32, 8, 8), 32, 3, 1, 1, 1),
    "few 3x3 64 @7": ((1, 64, 7, 7), 64, 3, 1, 1, 1),
    "few 3x3 64->128 @10": ((1, 64, 10, 10), 128, 3, 1, 1, 1),
    "few 3x3 128 @10": ((1, 128, 10, 10), 128, 3, 1, 1, 1),
    "few 3x3 16->256 @7": ((1, 16, 7, 7), 256, 3, 1, 1, 1),
    "few 3x3 256->32 @7": ((1, 256, 7, 7), 32, 3, 1, 1, 1),
    "few 3x3 64 @12": ((1, 64, 12, 12), 64, 3, 1, 1, 1),
}


Call = Callable[[], object]


def transposed_calls(variant: Variant, x: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                     stride: int, pad: int
                     ) -> tuple[list[Call], Call, Callable[[], np.ndarray]]:
    """The transposed layer's kernel calls on ``x`` placed in ``variant``'s memory after
    what is there, the product's call alone and a reader of the NCHW output."""
    (n, c, h, w), (o, _, k, _) = x.shape, weight.shape
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    pixels, depth = n * oh * ow, c * k * k
    rows = weight.transpose(0, 2, 3, 1).reshape(o, depth)  # (o, kh kw c): im2col's order
    pointwise = (k, stride, pad) == (1, 1, 0)
    px, pzero, pxt, pa, pw, pb, pc, pwa, py, pone = variant.place(
        [x, np.zeros(16, np.uint8), np.zeros(x.size, np.float32),
         np.zeros(pixels * depth, np.float32), pack_linear_weight(rows), bias,
         np.zeros(pixels * o, np.float32), np.zeros(pixels * depth, np.float32),
         np.zeros(pixels * o, np.float32), np.ones(1, np.float32)], after=True)

    def transpose(source: int, target: int, rows: int, cols: int) -> Call:
        # (n, rows, cols) -> (n, cols, rows) as the lowering moves it: the strided f32_mul by 1
        return variant.call("f32_mul", source, pone, target, 1, n, cols, rows,
                            0, rows * cols, 1, cols, 0, 0, 0, 0)
    calls = [transpose(px, pa if pointwise else pxt, c, h * w)]
    if not pointwise:
        calls.append(variant.call("qu8_im2col", pxt, pzero, pa, n, 4 * c, h, w, oh, ow, k, k,
                                  stride, stride, pad, pad, 1, 1))
    product = variant.call("f32_linear_bias", pa, pw, pb, pc, pwa, pixels, depth, o)
    calls += [product, transpose(pc, py, oh * ow, o)]

    def output() -> np.ndarray:
        view = np.ctypeslib.as_array(variant.memory.data_ptr(variant.store),
                                     shape=(variant.memory.data_len(variant.store),))
        return view[py:py + 4 * pixels * o].view(np.float32).reshape(n, o, oh, ow).copy()
    return calls, product, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--only", default="", help="shapes whose name holds this")
    args = parser.parse_args()
    variants = {isa: Variant(isa, pages=2000) for isa in wasm_kernels.ISA_NAMES
                if isa != "scalar"}
    print(f"batch 1, GFLOPS (median of {args.repeat} interleaved rounds); tp/gemm: the "
          "whole transposed layer's speed over the conv gemm's")
    print(f"{'shape':>26}{'pixels':>7}" + "".join(
        f"{'gemm-' + isa:>14}{'tp-' + isa:>12}{'lin-' + isa:>13}{'tp/gemm':>8}"
        for isa in variants))
    shapes = {**CONV_SHAPES, **REAL_CONV_SHAPES, **DEEP_SHAPES}
    for name, (shape, out, k, stride, pad, groups) in shapes.items():
        if groups != 1 or args.only not in name:
            continue
        n, c, h, w = shape
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape, np.float32)
        weight = rng.standard_normal((out, c, k, k), np.float32)
        bias = rng.standard_normal(out, np.float32)
        runs: dict[str, Callable[[], object]] = {}
        for isa, variant in variants.items():
            variant.end = 64
            kernel, runs["gemm-" + isa] = conv_call(variant, x, weight, stride, pad, 1)
            calls, runs["lin-" + isa], output = transposed_calls(variant, x, weight, bias,
                                                                stride, pad)
            runs["tp-" + isa] = lambda calls=calls: [call() for call in calls]
            runs["tp-" + isa]()
            expected = _reference(x, weight, bias, stride, pad)
            error = float(np.abs(output() - expected).max() / np.abs(expected).max())
            assert error < 1e-4, f"{name} {isa}: the transposed layer is off by {error:.2g}"
        times = interleaved_seconds(runs, args.repeat)
        flops = 2 * n * oh * ow * c * k * k * out
        row = ""
        for isa in variants:
            g = {kind: flops / statistics.median(times[f"{kind}-{isa}"]) / 1e9
                 for kind in ("gemm", "tp", "lin")}
            row += (f"{g['gemm']:>14.1f}{g['tp']:>12.1f}{g['lin']:>13.1f}"
                    f"{ratio(times, 'tp-' + isa, 'gemm-' + isa):>8.2f}")
        print(f"{name:>26}{oh * ow:>7}{row}", flush=True)


def _reference(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, stride: int,
               pad: int) -> np.ndarray:
    """The conv in numpy (float64 im2col), to check the transposed layer's output."""
    n, c, h, w = x.shape
    o, _, k, _ = weight.shape
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride][:, :, :oh, :ow]  # (n, c, oh, ow, k, k)
    y = np.einsum("ncyxij,ocij->noyx", windows, weight.astype(np.float64))
    return (y + bias[None, :, None, None]).astype(np.float32)


if __name__ == "__main__":
    main()
