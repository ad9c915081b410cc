"""The conv section of ``kernels.py`` (``--only conv``): each dense conv kernel, run by the kernel
a compiled model uses for its shape, beside ``f32_linear`` on the conv's implicit-gemm shape and
torch's single-thread conv2d, then the depthwise kernels (``depthwise.py``). Run through
``kernels.py``; the measurement rules are its own."""

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


def conv_call(variant: Variant, x: np.ndarray, weight: np.ndarray, stride: int, pad: int,
              groups: int) -> tuple[str, Callable[[], object]]:
    """The kernel a compiled model runs this conv with (``pack_im2col.runs_as_gemm``: ``gemm``
    or ``direct``) and its call on ``x`` placed in ``variant``'s memory, ready to time."""
    (n, c, h, w), (out, cg, k, _) = x.shape, weight.shape
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    sizes = (n, c, h, w, out, oh, ow, k, k, stride, stride, pad, pad, 1, 1, groups)
    y, bias = np.zeros((n, out, oh, ow), np.float32), np.zeros(out, np.float32)
    if not runs_as_gemm(cg, out // groups, (k, k), (stride, stride), (oh, ow), padded=pad > 0):
        px, pw, pb, py = variant.place([x, pack_conv_weight(weight, groups), bias, y])
        return "direct", variant.call("f32_conv2d", px, pw, pb, py, *sizes)
    columns = columns_per_chunk(cg * k * k, oh * ow, out // groups)
    padded = padded_floats(cg, (h, w), (oh, ow), (k, k), (stride,) * 2, (pad,) * 2, (1, 1))
    px, pw, pb, pws, pxp, py = variant.place([
        x, pack_im2col_weight(weight, groups), bias,
        np.zeros(scratch_floats(cg * k * k, oh * ow), np.float32),
        np.zeros(max(padded, 1), np.float32), y])
    return "gemm", variant.call("f32_conv2d_gemm", px, pw, pb, pws, pxp, py, *sizes, columns,
                                oh * ow, 0)


def bench_conv(repeat: int) -> None:
    """The conv per SIMD variant, run by the kernel a compiled model uses (``kernel``: the
    gemm or the direct one), interleaved with f32_linear on the conv's implicit-gemm shape
    (M, K, N) = (OH * OW, C * kh * kw, O) (a dense conv) and torch's single-thread conv2d;
    conv/lin is the median of per-round ratios."""
    import torch  # an extra, only for this section

    torch.set_num_threads(1)
    variants = {isa: Variant(isa, pages=1200) for isa in wasm_kernels.ISA_NAMES
                if isa != "scalar"}
    print(f"conv2d GFLOPS (median of {repeat} interleaved rounds), batch 1; {CONV_TARGETS}")
    print(f"{'shape':>24}{'kernel':>8}" + "".join(f"{isa:>9}{'lin-' + isa:>13}{'conv/lin':>9}"
                                                  for isa in variants)
          + f"{'torch-1t':>9}{'target':>8}")
    for name, (shape, out, k, stride, pad, groups) in {**CONV_SHAPES, **REAL_CONV_SHAPES}.items():
        n, c, h, w = shape
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape, np.float32)
        weight = rng.standard_normal((out, c // groups, k, k), np.float32)
        m_, k_ = n * oh * ow, c * k * k
        runs: dict[str, Callable[[], object]] = {}
        for isa, variant in variants.items():
            kernel, runs[isa] = conv_call(variant, x, weight, stride, pad, groups)
            if groups == 1:
                runs["lin-" + isa] = dense_call(
                    variant, "f32_linear", rng.standard_normal((m_, k_), np.float32),
                    pack_linear_weight(weight.reshape(out, k_)), m_, k_, out)
        tx, tw = torch.from_numpy(x), torch.from_numpy(weight)
        runs["torch"] = partial(torch.no_grad()(torch.nn.functional.conv2d), tx, tw, None,
                                stride, pad, 1, groups)
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
