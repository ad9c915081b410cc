"""The int8 sections of ``kernels.py`` (``--only int8,int8conv``): the integer linear and
the integer conv beside the f32 kernels on the same shapes, on each SIMD variant (issue #14).
Run through ``kernels.py``; the measurement rules are its own."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable

import numpy as np
from kernels import CONV_SHAPES, GEMM_SHAPES, Variant, dense_call, interleaved_seconds, ratio

import wasm_kernels
from wasm_kernels.pack import pack_conv_weight, pack_linear_weight
from wasm_kernels.pack_quantized import pack_qlinear_weight, qlinear_scratch_floats

INT8_SHAPES = GEMM_SHAPES[:3]
"""MiniLM-L6's linear layers at sequence 128 (issue #14's target: int8 >= 2x f32_linear)."""


def bench_int8(repeat: int) -> None:
    """qu8_qlinear_dequantize (uint8 A, int8 W, f32 out: a dynamically quantized linear)
    beside f32_linear, per SIMD variant, on MiniLM's shapes."""
    variants = {isa: Variant(isa, pages=400) for isa in wasm_kernels.ISA_NAMES if isa != "scalar"}
    print(f"int8 linear GOPS (median of {repeat} interleaved rounds); int8/f32: median of "
          "per-round ratios of qu8_qlinear_dequantize to f32_linear on the same variant; "
          "target (issue #14) >= 2")
    print(f"{'M x K x N':>16}" + "".join(f"{isa + ' ' + kind:>16}" for isa in variants
                                         for kind in ("f32", "int8"))
          + "".join(f"{isa + ' int8/f32':>18}" for isa in variants))
    for m, k, n in INT8_SHAPES:
        rng = np.random.default_rng(0)
        a = rng.standard_normal((m, k), np.float32)
        w = rng.standard_normal((n, k), np.float32)
        qa = rng.integers(0, 256, (m, k)).astype(np.uint8)
        qw = rng.integers(-127, 128, (n, k)).astype(np.int8)
        runs: dict[str, Callable[[], object]] = {}
        for isa, variant in variants.items():
            runs[f"{isa} f32"] = dense_call(variant, "f32_linear", a, pack_linear_weight(w),
                                            m, k, n)
            addresses = variant.place([
                qa, np.array([0.02], np.float32), np.array([128], np.uint8),
                pack_qlinear_weight(qw), np.full(n, 0.01, np.float32), np.zeros(n, np.int32),
                np.zeros(n, np.float32), np.zeros((m, n), np.float32),
                *(np.zeros(size, np.float32) for size in qlinear_scratch_floats(m, k))],
                after=True)
            runs[f"{isa} int8"] = variant.call("qu8_qlinear_dequantize", *addresses, m, k, n)
        times = interleaved_seconds(runs, repeat)
        ops = 2 * m * k * n
        row = "".join(f"{ops / statistics.median(times[x]) / 1e9:>16.1f}" for x in runs)
        row += "".join(f"{ratio(times, f'{isa} int8', f'{isa} f32'):>18.2f}" for isa in variants)
        print(f"{f'{m}x{k}x{n}':>16}{row}")


def _int8_conv_calls(variant: Variant, shape: tuple[int, ...], out: int, k: int, stride: int,
                     pad: int) -> tuple[Callable[[], object], Callable[[], object]]:
    """The kernel calls of one requantized uint8 ``qconv2d`` as modelc lowers it (NCHW to
    channels-last, im2col unless 1x1/1, the ``qu8_qconv_requantize`` product, back to NCHW):
    the whole sequence, and its layout calls (both transposes, im2col) alone."""
    n, c, h, w = shape
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    rng = np.random.default_rng(0)
    weight = rng.integers(-127, 128, (out, k, k, c)).astype(np.int8)
    x, last, a, y, result, *scratch = variant.place([
        rng.integers(0, 256, shape).astype(np.uint8), np.zeros(shape, np.uint8),
        np.zeros((n * oh * ow, k * k * c), np.uint8), np.zeros((n * oh * ow, out), np.uint8),
        np.zeros((n, out, oh, ow), np.uint8),
        *(np.zeros(size, np.float32) for size in qlinear_scratch_floats(n * oh * ow, k * k * c))],
        after=True)
    params = variant.place([np.array([0.02], np.float32), np.array([128], np.uint8),
                            pack_qlinear_weight(weight.reshape(out, -1)),
                            np.full(out, 0.001, np.float32), np.zeros(out, np.int32),
                            np.array([0.05], np.float32), np.array([100], np.uint8)],
                           after=True)
    pointwise = (k, stride, pad) == (1, 1, 0)
    to_rows = variant.call("qu8_transpose", x, a if pointwise else last, n, c, h * w)
    im2col = variant.call("qu8_im2col", last, params[1], a, n, c, h, w, oh, ow, k, k, stride,
                          stride, pad, pad, 1, 1)
    back = variant.call("qu8_transpose", y, result, n, oh * ow, out)
    product = variant.call("qu8_qconv_requantize", a, *params, y, *scratch, n * oh * ow,
                           k * k * c, out)

    def rows() -> None:
        to_rows()
        if not pointwise:
            im2col()

    def layout() -> None:
        rows()
        back()

    def whole() -> None:
        rows()
        product()
        back()

    return whole, layout


def bench_int8_conv(repeat: int) -> None:
    """The integer conv (the kernel calls of a requantized uint8 ``qconv2d``) beside
    ``f32_conv2d`` per SIMD variant, on the dense conv shapes of ResNet-18 and MobileNetV2;
    int8/f32 is the median of per-round ratios of f32 time to int8 time (a speed-up), layout
    the share of the int8 time in the transposes and im2col."""
    variants = {isa: Variant(isa, pages=1200) for isa in wasm_kernels.ISA_NAMES if isa != "scalar"}
    print(f"int8 conv GOPS (median of {repeat} interleaved rounds), batch 1")
    print(f"{'shape':>24}" + "".join(f"{isa + ' ' + kind:>14}" for isa in variants
                                     for kind in ("f32", "int8", "int8/f32", "layout")))
    for name, (shape, out, k, stride, pad, groups) in CONV_SHAPES.items():
        if groups != 1:
            continue
        n, c, h, w = shape
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        rng = np.random.default_rng(0)
        runs: dict[str, Callable[[], object]] = {}
        for isa, variant in variants.items():
            px, pw, pb, py = variant.place([
                rng.standard_normal(shape, np.float32),
                pack_conv_weight(rng.standard_normal((out, c, k, k), np.float32), 1),
                np.zeros(out, np.float32), np.zeros((n, out, oh, ow), np.float32)])
            runs[f"{isa} f32"] = variant.call("f32_conv2d", px, pw, pb, py, n, c, h, w, out,
                                              oh, ow, k, k, stride, stride, pad, pad, 1, 1, 1)
            runs[f"{isa} int8"], runs[f"{isa} layout"] = _int8_conv_calls(
                variant, shape, out, k, stride, pad)
        times = interleaved_seconds(runs, repeat)
        ops = 2 * n * oh * ow * c * k * k * out
        row = ""
        for isa in variants:
            row += "".join(f"{ops / statistics.median(times[f'{isa} {kind}']) / 1e9:>14.1f}"
                           for kind in ("f32", "int8"))
            row += f"{ratio(times, f'{isa} int8', f'{isa} f32'):>14.2f}"
            row += f"{ratio(times, f'{isa} int8', f'{isa} layout'):>14.2f}"
        print(f"{name:>24}{row}")


ROW_SHAPES = [(1, 256, 1024), (2, 256, 1024), (3, 256, 1024), (4, 256, 1024),
              (128, 256, 1024), (24, 512, 1024), (1, 512, 2048), (8, 512, 2048)]
"""text2tashkeel's LSTM products (issue #19 item 3): an unrolled step's hidden state (one
row, k = 256) by its 4 * 256 gates, a few rows, 128 rows (the tile's own rate), and the input
projection of 24 steps at once; VoiceFilter's step (k = 512 by 4 * 512 gates: wide, 2 MB,
past ``pack_quantized.WIDE_MAX_BYTES``) and its 8-step projection."""


ROW_OPS = ("qlinear", "qlinear_wide", "qlinear_mixed")
"""The rows compared: W packed as int8 and widened in the kernel, W packed wide (int16), and
W packed mixed with every panel 7-bit (its weights clipped to [-64, 63]: the relaxed module's
relaxed-dot tile; the simd128 module's i16 dot on the bytes)."""


def bench_int8_rows(repeat: int) -> None:
    """qu8_qlinear_dequantize at a few rows of A against many (an unrolled recurrent step's
    product against a whole sequence's), per SIMD variant, with W packed as int8 and wide
    (``qu8_qlinear_wide_dequantize``): microseconds per call (a Python call, ~4 us, included)
    and GOPS, each call repeated so that a timing spans at least ~2 ms."""
    variants = {isa: Variant(isa, pages=400) for isa in wasm_kernels.ISA_NAMES if isa != "scalar"}
    print(f"int8 linear at few rows: us per call / GOPS (median of {repeat} interleaved rounds)")
    print(f"{'M x K x N':>16}" + "".join(f"{isa + ' ' + op:>26}" for isa in variants
                                         for op in ROW_OPS))
    for m, k, n in ROW_SHAPES:
        rng = np.random.default_rng(0)
        qa = rng.integers(0, 256, (m, k)).astype(np.uint8)
        qw = rng.integers(-127, 128, (n, k)).astype(np.int8)
        calls = max(1, 2_000_000 // (m * k * n // 1000))
        runs: dict[str, Callable[[], object]] = {}
        for (isa, variant), op in itertools.product(variants.items(), ROW_OPS):
            addresses = variant.place([
                qa, np.array([0.02], np.float32), np.array([128], np.uint8),
                pack_qlinear_weight(np.clip(qw, -64, 63) if op == "qlinear_mixed" else qw,
                                    wide=op == "qlinear_wide", mixed=op == "qlinear_mixed"),
                np.full(n, 0.01, np.float32),
                np.zeros(n, np.int32), np.zeros(n, np.float32), np.zeros((m, n), np.float32),
                *(np.zeros(size, np.float32) for size in qlinear_scratch_floats(m, k))],
                after=True)
            call = variant.call(f"qu8_{op}_dequantize", *addresses, m, k, n)

            def run(call: Callable[[], object] = call, calls: int = calls) -> None:
                for _ in range(calls):
                    call()

            runs[f"{isa} {op}"] = run
        times = interleaved_seconds(runs, repeat)
        cells = []
        for name in runs:
            seconds = statistics.median(times[name]) / calls
            cells.append(f"{seconds * 1e6:>12.1f} / {2 * m * k * n / seconds / 1e9:>6.1f}")
        print(f"{f'{m}x{k}x{n}':>16}" + "".join(f"{cell:>26}" for cell in cells))
