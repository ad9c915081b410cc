"""softmax, layer_norm and the reductions against numpy, at register edges."""

import numpy as np
import pytest

from wasm_kernels import abi

ROW_SIZES = [1, 3, 4, 9, 64, 387]


def test_softmax_is_stable(kernels) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    for n in ROW_SIZES:
        x = (rng.standard_normal((3, n)) * 30 + 500).astype(np.float32)  # exp would overflow
        y = kernels.call("f32_softmax", offset=4, x=x, y=(3, n), rows=3, n=n)["y"]
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("n", ROW_SIZES)
def test_softmax_special_values_as_numpy(kernels, n: int) -> None:  # type: ignore[no-untyped-def]
    """Masked entries (-inf, or the -3.4e38 BERT adds) get 0; a NaN anywhere in a row, at
    any position of the register or the tail, makes the whole row NaN."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((4, n)).astype(np.float32)
    x[0, ::2] = -np.inf
    x[1, rng.integers(n)] = np.float32(-3.4028235e38)
    x[2, rng.integers(n)] = np.nan
    x[3, n - 1] = np.nan
    y = kernels.call("f32_softmax", offset=8, x=x, y=(4, n), rows=4, n=n)["y"]
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        expected = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-7)  # NaN places must agree


def test_layer_norm(kernels) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(4)
    for n in ROW_SIZES:
        x = (rng.standard_normal((2, n)) * 4 + 2).astype(np.float32)
        gamma = rng.standard_normal(n).astype(np.float32)
        beta = rng.standard_normal(n).astype(np.float32)
        y = kernels.call("f32_layer_norm", x=x, gamma=gamma, beta=beta, y=(2, n), rows=2, n=n,
                         eps=1e-5)["y"]
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=1, keepdims=True)
        expected = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5) * gamma + beta
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4, err_msg=f"n={n}")


@pytest.mark.parametrize("op", list(abi.REDUCE_OPS))
@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 7, 1), (3, 33, 1), (2, 5, 3), (1, 4, 8),
                                   (3, 6, 13)], ids=str)
def test_reduce_middle_axis(kernels, op: str, shape: tuple[int, int, int]) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    outer, n, inner = shape
    y = kernels.call(f"f32_reduce_{op}", offset=4, x=x, y=(outer, inner), outer=outer, n=n,
                     inner=inner)["y"]
    expected = getattr(np, op)(x.astype(np.float64), axis=1)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [15, 16, 17, 33, 100, 508])
def test_row_max_as_numpy_in_every_register_chain(kernels, n: int) -> None:  # type: ignore[no-untyped-def]
    """A row's max (four registers in flight on the vector ISAs, then one, then a scalar
    tail): the largest or a NaN in any of them, a row of -inf."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((6, n)).astype(np.float32)
    x[1] = -np.inf
    x[2, rng.integers(n)] = np.nan
    x[3, n - 1] = np.nan
    x[4, n - 1] = 9.0
    x[5, rng.integers(n)] = 9.0
    y = kernels.call("f32_reduce_max", offset=4, x=x, y=(6, 1), outer=6, n=n, inner=1)["y"]
    np.testing.assert_array_equal(y.ravel(), x.max(axis=1))


LONG_ROWS = [1000, 18710, 100000]  # 18,710: the classes of the PP-OCRv5/v6 recognizers


@pytest.mark.parametrize("n", LONG_ROWS)
def test_long_rows_sum_as_accurately_as_float64_allows(kernels, n: int) -> None:  # type: ignore[no-untyped-def]
    """Sums over long rows stay within a few float32 roundings of float64, not the ~sqrt(n)
    of one running accumulator: reduce_sum, softmax's denominator and layer_norm's mean and
    variance (one running sum per lane drifted to 1e-5 on scalar at n=100000)."""
    rng = np.random.default_rng(n)
    x = rng.random((2, n)).astype(np.float32)
    x64 = x.astype(np.float64)
    total = kernels.call("f32_reduce_sum", x=x, y=(2, 1), outer=2, n=n, inner=1)["y"].ravel()
    np.testing.assert_allclose(total, x64.sum(axis=1), rtol=3e-7, atol=0)
    y = kernels.call("f32_softmax", x=x, y=(2, n), rows=2, n=n)["y"]
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-6, atol=0)
    x = (rng.standard_normal((2, n)) * 4 + 20).astype(np.float32)
    x64 = x.astype(np.float64)
    y = kernels.call("f32_layer_norm", x=x, gamma=np.ones(n, np.float32),
                     beta=np.zeros(n, np.float32), y=(2, n), rows=2, n=n, eps=1e-5)["y"]
    mean = x64.mean(axis=1, keepdims=True)
    expected = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, expected, rtol=0, atol=2e-6)


@pytest.mark.parametrize("n", LONG_ROWS)
def test_long_row_sums_overflow_as_numpy(kernels, n: int) -> None:  # type: ignore[no-untyped-def]
    """An infinity in a long row, or a sum past float32's range, gives +-inf; both signs of
    infinity, or a NaN, give NaN; whatever block (or the tail) they fall in."""
    rng = np.random.default_rng(n)
    x = rng.random((5, n)).astype(np.float32)
    x[0, rng.integers(n)] = np.inf
    x[1, n - 1] = -np.inf
    x[2, :] = np.float32(3e38)
    x[3, 1], x[3, n // 2] = np.inf, -np.inf
    x[4, rng.integers(n)] = np.nan
    total = kernels.call("f32_reduce_sum", x=x, y=(5, 1), outer=5, n=n, inner=1)["y"].ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        np.testing.assert_array_equal(total, x.sum(axis=1, dtype=np.float32))
