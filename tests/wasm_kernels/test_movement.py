"""f32_copy (strided on both sides), f32_where (bool condition) and f32_group_norm."""

import numpy as np
import pytest

from nn import functional as F


def _dims(shape: tuple[int, ...], prefix: str, strides: tuple[int, ...]) -> dict[str, int]:
    return {f"{prefix}{i}": s for i, s in enumerate(strides)}


def _dense(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))


@pytest.mark.parametrize("inner", [1, 3], ids=["contiguous", "strided"])
def test_copy_into_a_region(kernels, inner: int) -> None:  # type: ignore[no-untyped-def]
    """Fill y, and write x (2, 3, 4, 5) into a region of a larger y (pad, concat)."""
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5 * inner)).astype(np.float32)
    big = (2, 3, 6, 9)
    dims = {f"d{i}": d for i, d in enumerate((2, 3, 4, 5))}
    xs = _dense(x.shape)[:3] + (inner,)
    y = kernels.call("f32_copy", x=np.full(1, 7.0, np.float32), y=big,
                     **{f"d{i}": d for i, d in enumerate(big)},
                     **_dims(big, "xs", (0, 0, 0, 0)), **_dims(big, "ys", _dense(big)))["y"]
    assert (y == 7.0).all()
    out = kernels.call("f32_copy", x=x, y=big, **dims, **_dims(x.shape, "xs", xs),
                       **_dims(big, "ys", _dense(big)))["y"]
    region = out[:, :, :4, :5]
    assert np.isnan(out[:, :, 4:]).all() and np.isnan(out[..., 5:]).all()
    np.testing.assert_array_equal(region, x[..., ::inner])


def test_where_broadcasts_condition_and_operands(kernels) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    cond = rng.random((1, 3, 1, 7)) > 0.5
    a = rng.standard_normal((2, 3, 4, 7)).astype(np.float32)
    b = np.float32(-9.0) * np.ones((1, 1, 1, 1), np.float32)
    out_shape = (2, 3, 4, 7)
    strides = {"c": (0, 7, 0, 1), "a": _dense(out_shape), "b": (0, 0, 0, 0)}
    y = kernels.call("f32_where", offset=1, cond=cond, a=a, b=b, y=out_shape,
                     **{f"d{i}": d for i, d in enumerate(out_shape)},
                     **{f"{t}s{i}": s for t, st in strides.items() for i, s in enumerate(st)})["y"]
    np.testing.assert_array_equal(y, np.where(cond, a, b))


@pytest.mark.parametrize("shape, groups", [((2, 6, 5, 3), 3), ((1, 4, 1, 1), 4),
                                           ((3, 8, 4, 9), 2)])
def test_group_norm(kernels, shape: tuple[int, ...], groups: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    gamma = rng.standard_normal(shape[1]).astype(np.float32)
    beta = rng.standard_normal(shape[1]).astype(np.float32)
    y = kernels.call("f32_group_norm", x=x, gamma=gamma, beta=beta, y=shape, n=shape[0],
                     groups=groups, channels=shape[1] // groups,
                     spatial=int(np.prod(shape[2:])), eps=1e-5)["y"]
    np.testing.assert_allclose(y, F.group_norm(x, groups, gamma, beta), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name, dtype", [("f32_where", np.int32), ("f32_where", np.float32),
                                         ("i64_where", np.int64), ("u8_where", np.int8),
                                         ("u8_where", np.uint8), ("u16_where", np.int16)])
def test_where_moves_elements_bit_for_bit(kernels, name: str, dtype: type) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    out_shape = (2, 1, 3, 5)
    cond = rng.random((1, 1, 3, 5)) > 0.5
    if dtype is np.float32:  # NaN payloads and a signalling NaN survive unchanged
        a = rng.integers(0x7F800001, 0x7FFFFFFF, out_shape, dtype=np.uint32).view(np.float32)
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, out_shape, dtype=dtype)
    b = np.array([[[[np.iinfo(dtype).min + 5 if dtype is not np.float32 else 5]]]], dtype)
    strides = {"c": (0, 0, 5, 1), "a": _dense(out_shape), "b": (0, 0, 0, 0)}
    y = kernels.call(name, offset=8, cond=cond, a=a, b=b, y=kernels.output(out_shape, dtype),
                     **{f"d{i}": d for i, d in enumerate(out_shape)},
                     **{f"{t}s{i}": s for t, st in strides.items() for i, s in enumerate(st)})["y"]
    np.testing.assert_array_equal(y.view(np.uint8), np.where(cond, a, b).view(np.uint8))


@pytest.mark.parametrize("name, dtype", [("u8_copy", np.uint8), ("u16_copy", np.int16)])
@pytest.mark.parametrize("inner", [1, 3], ids=["contiguous", "strided"])
def test_narrow_copy_into_a_region(kernels, name: str, dtype: type, inner: int) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(4).integers(-100, 100, (2, 3, 4, 5 * inner)).astype(dtype)
    big = (2, 3, 6, 9)
    dims = {f"d{i}": d for i, d in enumerate((2, 3, 4, 5))}
    xs = _dense(x.shape)[:3] + (inner,)
    fill = np.full(big, 7, dtype)
    out = kernels.call(name, offset=1, x=x, y=kernels.inout(fill), **dims, **_dims(x.shape, "xs", xs),
                       **_dims(big, "ys", _dense(big)))["y"]
    np.testing.assert_array_equal(out[:, :, :4, :5], x[..., ::inner])
    assert (out[:, :, 4:] == 7).all() and (out[..., 5:] == 7).all()
