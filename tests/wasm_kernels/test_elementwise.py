"""Unary and broadcasting binary kernels against numpy, at register edges and odd offsets."""

import numpy as np
import pytest

from nn import functional as F
from wasm_kernels import abi

SIZES = [1, 3, 4, 7, 16, 33, 1000]
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "max": np.maximum, "min": np.minimum}


@pytest.mark.parametrize("op", list(abi.UNARY_OPS))
def test_unary(kernels, op: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    for size in SIZES:
        x = (rng.standard_normal(size) * 3).astype(np.float32)
        if op in ("log", "sqrt"):
            x = np.abs(x) + np.float32(1e-3)
        y = kernels.call(f"f32_{op}", offset=4 * (size % 4), x=x, y=(size,), n=size)["y"]
        expected = getattr(F, op)(x.astype(np.float64))
        np.testing.assert_allclose(y, expected, rtol=2e-6, atol=1e-6, err_msg=f"{op} n={size}")


# (output dims, a shape, b shape) — numpy broadcasting, padded to rank 4 by the caller.
BROADCASTS = [
    ((1, 1, 1, 13), (1, 1, 1, 13), (1, 1, 1, 13)),       # dense, tail
    ((2, 3, 4, 8), (2, 3, 4, 8), (1, 1, 1, 8)),          # bias over the last axis
    ((2, 3, 5, 7), (2, 3, 5, 7), (1, 3, 1, 1)),          # per-channel scale, b splatted
    ((1, 2, 5, 6), (1, 1, 1, 1), (1, 2, 5, 6)),          # scalar a
    ((2, 1, 4, 9), (2, 1, 4, 1), (1, 1, 1, 9)),          # outer product
    ((3, 2, 2, 1), (3, 2, 2, 1), (3, 2, 2, 1)),          # inner size 1
]


def _strides(shape: tuple[int, ...], out: tuple[int, ...]) -> list[int]:
    dense = np.cumprod((1,) + shape[:0:-1])[::-1]
    return [0 if s == 1 and o != 1 else int(d) for s, o, d in zip(shape, out, dense)]


@pytest.mark.parametrize("op", list(abi.BINARY_OPS))
def test_binary_broadcasting(kernels, op: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    for out_shape, a_shape, b_shape in BROADCASTS:
        a = rng.standard_normal(a_shape).astype(np.float32)
        b = (rng.standard_normal(b_shape) + 3).astype(np.float32)
        args = {f"d{i}": d for i, d in enumerate(out_shape)}
        args.update({f"as{i}": s for i, s in enumerate(_strides(a_shape, out_shape))})
        args.update({f"bs{i}": s for i, s in enumerate(_strides(b_shape, out_shape))})
        y = kernels.call(f"f32_{op}", offset=4, a=a, b=b, y=out_shape, **args)["y"]
        np.testing.assert_allclose(y, BINARY[op](a, b), rtol=1e-6, err_msg=f"{op} {out_shape}")


# (a's dense shape, permutation): the output reads ``a`` transposed, ``b`` one float
TRANSPOSES = [
    ((1, 1, 9, 13), (0, 1, 3, 2)),     # 4x4 blocks, a column tail and a row tail
    ((1, 2, 16, 8), (0, 1, 3, 2)),     # whole blocks only
    ((2, 3, 7, 2), (0, 1, 3, 2)),      # rows of two: zipped columns
    ((2, 5, 4, 3), (1, 0, 3, 2)),      # rows of three: column tail only
    ((3, 6, 4, 1), (0, 3, 2, 1)),      # a unit axis, then rows of six
    ((2, 3, 4, 5), (0, 3, 1, 2)),      # not a transpose of the inner axes (as2 != 1)
]


@pytest.mark.parametrize("op", list(abi.BINARY_OPS))
@pytest.mark.parametrize("shape, order", TRANSPOSES, ids=str)
def test_binary_reading_a_transposed(kernels, op: str, shape: tuple[int, ...],
                                     order: tuple[int, ...]) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape).astype(np.float32)
    b = np.float32(rng.standard_normal() + 3)
    out_shape = tuple(shape[k] for k in order)
    dense = np.cumprod((1,) + shape[:0:-1])[::-1]
    args = {f"d{i}": d for i, d in enumerate(out_shape)}
    args.update({f"as{i}": 0 if out_shape[i] == 1 else int(dense[k])
                 for i, k in enumerate(order)})
    args.update({f"bs{i}": 0 for i in range(4)})
    y = kernels.call(f"f32_{op}", offset=4, a=a, b=np.array([b]), y=out_shape, **args)["y"]
    want = BINARY[op](np.transpose(a, order), b)
    np.testing.assert_allclose(y, want, rtol=1e-6, err_msg=f"{op} {shape} {order}")


@pytest.mark.parametrize("op", list(abi.BINARY_OPS))
@pytest.mark.parametrize("n", [1, 3, 4, 5, 8, 9, 13])
def test_binary_reading_every_other_float(kernels, op: str, n: int) -> None:  # type: ignore[no-untyped-def]
    """``a`` at stride 2 along the rows (a step-2 slice), from an even and an odd start,
    ``b`` one float: two registers' even lanes per output register, then the tail."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal(2 * 3 * 2 * n + 1).astype(np.float32)
    b = np.float32(rng.standard_normal() + 3)
    out_shape = (2, 1, 3, n)
    strides = {"as0": 6 * n, "as1": 0, "as2": 2 * n, "as3": 2}
    for start in (0, 1):
        y = kernels.call(f"f32_{op}", offset=4, a=a[start:start + 12 * n], b=np.array([b]),
                         y=out_shape, d0=2, d1=1, d2=3, d3=n, bs0=0, bs1=0, bs2=0, bs3=0,
                         **strides)["y"]
        taken = a[start:start + 12 * n].reshape(2, 1, 3, 2 * n)[..., ::2]
        np.testing.assert_allclose(y, BINARY[op](taken, b), rtol=1e-6, err_msg=f"{op} {start}")


@pytest.mark.parametrize("op", list(abi.COMPARE_OPS))
def test_compare_broadcasting(kernels, op: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    compare = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}[op]
    for out_shape, a_shape, b_shape in BROADCASTS:
        # Few distinct values, so equal pairs occur; NaN and infinities among them.
        choices = np.array([-1.5, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf], np.float32)
        a = rng.choice(choices, a_shape).astype(np.float32)
        b = rng.choice(choices, b_shape).astype(np.float32)
        args = {f"d{i}": d for i, d in enumerate(out_shape)}
        args.update({f"as{i}": s for i, s in enumerate(_strides(a_shape, out_shape))})
        args.update({f"bs{i}": s for i, s in enumerate(_strides(b_shape, out_shape))})
        y = kernels.call(f"f32_cmp_{op}", offset=4, a=a, b=b, y=kernels.output(out_shape, np.uint8),
                         **args)["y"]
        with np.errstate(invalid="ignore"):
            expected = compare(a, b).astype(np.uint8)
        np.testing.assert_array_equal(y, expected, err_msg=f"{op} {out_shape}")


@pytest.mark.parametrize("dtype", ["int32", "int64", "int16", "uint16", "int8", "uint8", "bool"])
@pytest.mark.parametrize("op", list(abi.COMPARE_OPS))
def test_integer_compare_broadcasting(kernels, op: str, dtype: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(4)
    compare = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}[op]
    np_dtype = np.dtype(dtype)
    info = np.iinfo(np.uint8 if dtype == "bool" else np_dtype)
    # Extremes and equal pairs; values that differ only above bit 31 for int64.
    choices = np.array(sorted({int(info.min), min(-1, int(info.min) + 1), 0, 3, int(info.max)}
                              | ({2 ** 32 + 3} if dtype == "int64" else set())))
    choices = (choices != 0) if dtype == "bool" else choices.astype(np_dtype)
    for out_shape, a_shape, b_shape in BROADCASTS:
        a, b = rng.choice(choices, a_shape), rng.choice(choices, b_shape)
        args = {f"d{i}": d for i, d in enumerate(out_shape)}
        args.update({f"as{i}": s for i, s in enumerate(_strides(a_shape, out_shape))})
        args.update({f"bs{i}": s for i, s in enumerate(_strides(b_shape, out_shape))})
        y = kernels.call(abi.find("compare", op, dtype=dtype).name, offset=8, a=a, b=b,
                         y=kernels.output(out_shape, np.uint8), **args)["y"]
        np.testing.assert_array_equal(y, compare(a, b).astype(np.uint8),
                                      err_msg=f"{op} {out_shape}")


@pytest.mark.parametrize("dtype", ["int32", "int64", "int16", "uint16", "int8", "uint8"])
@pytest.mark.parametrize("op", list(abi.INTEGER_OPS))
def test_integer_arithmetic_broadcasting_wraps(kernels, op: str, dtype: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    np_dtype = np.dtype(dtype)
    info = np.iinfo(np_dtype)
    choices = np.array([v for v in (info.min, -7, -1, 0, 1, 3, 2 ** 20 + 1, info.max)
                        if info.min <= v <= info.max], np_dtype)
    for out_shape, a_shape, b_shape in BROADCASTS:
        a, b = rng.choice(choices, a_shape), rng.choice(choices, b_shape)
        args = {f"d{i}": d for i, d in enumerate(out_shape)}
        args.update({f"as{i}": s for i, s in enumerate(_strides(a_shape, out_shape))})
        args.update({f"bs{i}": s for i, s in enumerate(_strides(b_shape, out_shape))})
        y = kernels.call(abi.find("integer", op, dtype=dtype).name, offset=8, a=a, b=b,
                         y=kernels.output(out_shape, np_dtype), **args)["y"]
        with np.errstate(over="ignore"):
            want = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                    "maximum": np.maximum, "minimum": np.minimum}[op](a, b)
        np.testing.assert_array_equal(y, want, err_msg=f"{op} {out_shape}")
