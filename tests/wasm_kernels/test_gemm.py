"""Every gemm and linear row and the batched matmul against numpy, at the tile edges of each
variant."""

import numpy as np
import pytest

from nn import functional as F
from wasm_kernels import abi
from wasm_kernels.pack import pack_linear_weight

# (m, k, n): size 1, below the 4x8 tile, one tile and a row (k once the 32 unrolled steps),
# n % 8 and m % 4 remainders, a 4-column and a scalar column tail, k % 32 tails after whole
# unrolled iterations, several tiles; every way linear's relaxed driver covers a block's rows
# with tiles of 5 and 4 rows and single rows left over (m = 2, 3, 6, 7, 8, 11, 12, 13, 32, 37);
# and larger cases with k % 32 == 17 and A rows of 8004 bytes, so linear's L2 blocks of A are
# 15 or 16 rows and m = 44 spans three (the relaxed driver's last one 5 + 5 + 4 rows). simd128
# runs tiles of 3 panels first (n = 24, 36, 70, 130), and f32_gemm packs B 12 panels at a time
# there: n = 130 is two chunks, the second one group, a panel and two columns read in place.
SHAPES = [(1, 1, 1), (3, 5, 7), (4, 3, 8), (4, 32, 8), (5, 17, 13), (8, 16, 16), (9, 33, 30),
          (2, 40, 9), (6, 35, 17), (7, 64, 8), (11, 33, 16), (13, 40, 9), (32, 70, 24),
          (12, 24, 36), (37, 64, 70), (6, 40, 130), (5, 2001, 70), (44, 2001, 12)]
GEMMS = [k for k in abi.KERNELS if k.family in ("gemm", "linear") and "batch" not in k.params]


def reference(spec: abi.KernelSpec, a, b, bias, r) -> np.ndarray:  # type: ignore[no-untyped-def]
    out = a.astype(np.float64) @ b
    if bias is not None:
        out += bias
    if r is not None:
        out += r
    for op in spec.activations:
        out = getattr(F, op)(out)
    return out


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_rows(kernels, shape) -> None:  # type: ignore[no-untyped-def]
    m, k, n = shape
    rng = np.random.default_rng(m * 100 + n)
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((k, n), np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    r = rng.standard_normal((m, n)).astype(np.float32)
    for offset, spec in enumerate(GEMMS):
        args = {"a": a, "b": b, "w": pack_linear_weight(b.T), "c": (m, n), "ws": (n, k), "wa": (m, k),
                "m": m, "k": k, "n": n, "bias": bias, "r": r}
        out = kernels.call(spec.name, offset=4 * (offset % 3), **args)["c"]
        expected = reference(spec, a, b, bias if "bias" in spec.params else None,
                             r if "r" in spec.params else None)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4 * np.sqrt(k),
                                   err_msg=spec.name)


@pytest.mark.parametrize("a_stride_on, b_stride_on", [(1, 1), (1, 0), (0, 1)])
def test_bmm_broadcasts_by_zero_stride(kernels, a_stride_on, b_stride_on) -> None:  # type: ignore[no-untyped-def]
    batch, m, k, n = 3, 6, 9, 11
    rng = np.random.default_rng(7)
    a = rng.standard_normal((batch, m, k), np.float32)
    b = rng.standard_normal((batch, k, n), np.float32)
    out = kernels.call("f32_bmm", offset=4, a=a, b=b, c=(batch, m, n), batch=batch, m=m,
                       k=k, n=n, a_stride=a_stride_on * m * k,
                       b_stride=b_stride_on * k * n)["c"]
    expected = (a if a_stride_on else a[:1]) @ (b if b_stride_on else b[:1])
    np.testing.assert_allclose(out, np.broadcast_to(expected, out.shape), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["f32_gemm_bias", "f32_linear_bias"])
def test_gemm_large_k_is_exact(kernels, name) -> None:  # type: ignore[no-untyped-def]
    m, k, n = 2, 1031, 9
    a = np.ones((m, k), np.float32)
    b = np.full((k, n), 0.5, np.float32)
    out = kernels.call(name, a=a, b=b, w=pack_linear_weight(b.T),
                       bias=np.ones(n, np.float32), c=(m, n), ws=(n, k), wa=(m, k), m=m, k=k, n=n)["c"]
    np.testing.assert_array_equal(out, np.full((m, n), k * 0.5 + 1, np.float32))


@pytest.mark.parametrize("shape", SHAPES[:-1], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("batch, every", [(1, 1), (6, 6), (6, 3), (6, 1), (4, 9)])
def test_bmm_bias_rows_shared_by_batch_groups(kernels, shape, batch, every) -> None:  # type: ignore[no-untyped-def]
    """Each bias row serves ``every`` consecutive batches (a mask of (B, 1, 1, T) over
    (B, heads, T, T) scores); ``every`` past the batch count means one row for all."""
    m, k, n = shape
    rng = np.random.default_rng(m + 10 * batch + every)
    a = rng.standard_normal((batch, m, k), np.float32)
    b = rng.standard_normal((batch, k, n), np.float32)
    rows = -(-batch // every)
    bias = rng.standard_normal((rows, n)).astype(np.float32)
    out = kernels.call("f32_bmm_bias", offset=4 * (n % 3), a=a, b=b, bias=bias,
                       c=(batch, m, n), batch=batch, m=m, k=k, n=n, a_stride=m * k,
                       b_stride=k * n, bias_every=every)["c"]
    expected = a.astype(np.float64) @ b + bias[np.arange(batch) // every][:, None, :]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("k", [33, 40, 64])
@pytest.mark.parametrize("n", [24, 48])
@pytest.mark.parametrize("name", ["f32_linear", "f32_gemm"])
def test_dense_reads_nothing_past_its_panels(kernels, name, k, n) -> None:  # type: ignore[no-untyped-def]
    """The packed panels (W, or gemm's scratch ``ws``) end at the last byte of linear
    memory: the tiles' reads ahead of the next panel (or, in simd128's tiles of 3 panels,
    of the next 3) stay inside them (a read past them would trap). m = 32 is 8 packed tiles
    per panel, enough reads ahead to reach a panel's end."""
    m = 32
    rng = np.random.default_rng(k)
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((k, n), np.float32)
    panels = pack_linear_weight(b.T) if name == "f32_linear" else np.zeros(n * k, np.float32)
    memory = kernels.view()
    at = {"a": 64, "b": 64 + a.nbytes, "c": 64 + a.nbytes + b.nbytes,
          "wa": 64 + a.nbytes + b.nbytes + 4 * m * n, "panels": memory.size - panels.nbytes}
    memory[at["a"]:at["a"] + a.nbytes] = a.view(np.uint8).ravel()
    memory[at["b"]:at["b"] + b.nbytes] = b.view(np.uint8).ravel()
    memory[at["panels"]:] = panels.view(np.uint8)
    values = dict(at, w=at["panels"], ws=at["panels"], m=m, k=k, n=n)
    kernels.funcs(name)(kernels.store, *(values[p] for p in abi.BY_NAME[name].params))
    out = memory[at["c"]:at["c"] + 4 * m * n].view(np.float32).reshape(m, n)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))
