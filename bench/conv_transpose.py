"""GFLOPS of f32_conv_transpose2d (each ISA variant) beside torch's single-thread
conv_transpose2d and beside our own f32_gemm on the same multiply-adds, in one run.

    .venv/bin/python bench/conv_transpose.py [--repeat 7]

FLOPs count the useful multiply-adds, 2 * N * C * (O / g) * kh * kw * H * W. The gemm column
times ``f32_gemm`` on (M, K, N) = (O / g * kh * kw, C / g, H * W) for one group: the same
products, without the scatter into the output. Medians over ``--repeat`` calls on a shared,
noisy machine; no result is asserted.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import numpy as np
from kernels import Variant, dense_call, median_seconds

import wasm_kernels
from wasm_kernels.pack import pack_conv_transpose_weight

# name: (input (N, C, H, W), out channels, kernel, stride, padding, output padding, groups)
SHAPES = {
    "3x3 s2 64->32 @28": ((1, 64, 28, 28), 32, 3, 2, 1, 1, 1),
    "2x2 s2 128->64 @28": ((1, 128, 28, 28), 64, 2, 2, 0, 0, 1),
    "4x4 s2 64->64 @32": ((1, 64, 32, 32), 64, 4, 2, 1, 0, 1),
    "3x3 s1 32->32 @56": ((1, 32, 56, 56), 32, 3, 1, 1, 0, 1),
    "dw4x4 s2 64 @32": ((1, 64, 32, 32), 64, 4, 2, 1, 0, 64),
}


def _repeat(run: Callable[[], object], times: int) -> None:
    for _ in range(times):
        run()


def bench(repeat: int) -> None:
    import torch  # an extra, only for the peer column

    torch.set_num_threads(1)
    variants = {isa: Variant(isa, pages=400) for isa in wasm_kernels.ISA_NAMES}
    simd = [isa for isa in variants if isa != "scalar"]
    print(f"conv_transpose2d GFLOPS (median of {repeat}), batch 1")
    print(f"{'shape':>20}" + "".join(f"{isa:>10}" for isa in variants) + f"{'torch-1t':>10}"
          + "".join(f"{isa + '/torch':>15}" for isa in simd)
          + "".join(f"{'gemm-' + isa:>14}{isa + '/gemm':>14}" for isa in simd))
    for name, (shape, out, k, s, p, op, groups) in SHAPES.items():
        n, c, h, w = shape
        oh, ow = ((size - 1) * s - 2 * p + k + op for size in (h, w))
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape, np.float32)
        weight = rng.standard_normal((c, out // groups, k, k), np.float32)
        bias = np.zeros(out, np.float32)
        flops = 2 * n * c * (out // groups) * k * k * h * w
        gflops, gemm = {}, {}
        for isa, variant in variants.items():
            px, pw, pb, py = variant.place([x, pack_conv_transpose_weight(weight, groups), bias,
                                            np.zeros((n, out, oh, ow), np.float32)])
            run = variant.exports["f32_conv_transpose2d"]
            args = (px, pw, pb, py, n, c, h, w, out, oh, ow, k, k, s, s, p, p, 1, 1, groups)
            reps = max(1, repeat // 3) if isa == "scalar" else repeat
            gflops[isa] = flops / median_seconds(functools.partial(run, variant.store, *args),
                                                 reps) / 1e9
            if isa in simd:
                m_, k_, n_ = out // groups * k * k, c // groups, h * w
                matmul = dense_call(variant, "f32_gemm", np.ones((m_, k_), np.float32),
                                    np.ones((k_, n_), np.float32), m_, k_, n_)
                gemm[isa] = 2 * m_ * k_ * n_ * groups / median_seconds(
                    functools.partial(_repeat, matmul, groups), repeat) / 1e9
        tx, tw = torch.from_numpy(x), torch.from_numpy(weight)
        with torch.no_grad():
            gflops["torch"] = flops / median_seconds(functools.partial(
                torch.nn.functional.conv_transpose2d, tx, tw, None, s, p, op, groups),
                repeat) / 1e9
        row = "".join(f"{gflops[isa]:>10.1f}" for isa in variants) + f"{gflops['torch']:>10.1f}"
        row += "".join(f"{gflops[isa] / gflops['torch']:>15.2f}" for isa in simd)
        row += "".join(f"{gemm[isa]:>14.1f}{gflops[isa] / gemm[isa]:>14.2f}" for isa in simd)
        print(f"{name:>20}{row}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per measurement")
    bench(parser.parse_args().repeat)


if __name__ == "__main__":
    main()
