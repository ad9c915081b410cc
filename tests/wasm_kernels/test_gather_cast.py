"""f32_gather (bounds-checked row gather by int64 index) and the cast rows, on every
provider."""

import numpy as np
import pytest
import wasmtime

from runtime import ResourceLimits, Trap
from runtime.compartment import translate
from wasi_intrinsics.kernel_limits import KernelFault


@pytest.mark.parametrize("count, rows, dim", [(1, 1, 1), (5, 7, 3), (16, 30, 64), (9, 4, 13)])
def test_gather_rows(kernels, count: int, rows: int, dim: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(count)
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    index = rng.integers(0, rows, count).astype(np.int64)
    y = kernels.call("f32_gather", offset=4 * (dim % 3), table=table, index=index,
                     y=(count, dim), count=count, rows=rows, dim=dim)["y"]
    np.testing.assert_array_equal(y, table[index])


@pytest.mark.parametrize("bad", [4, -1, 2 ** 32, -(2 ** 40)], ids=str)
def test_gather_traps_on_an_index_out_of_range(kernels, bad: int) -> None:  # type: ignore[no-untyped-def]
    table = np.ones((4, 2), np.float32)
    index = np.array([0, bad], np.int64)
    with pytest.raises((wasmtime.Trap, KernelFault)) as info:
        kernels.call("f32_gather", table=table, index=index, y=(2, 2), count=2, rows=4, dim=2)
    trap = translate(info.value, ResourceLimits())  # NOTE: what the runtime raises for both
    assert isinstance(trap, Trap) and trap.code == "unreachable"


def test_i64_to_f32(kernels) -> None:  # type: ignore[no-untyped-def]
    x = np.array([0, 1, -7, 30522, 2 ** 24 + 1, -(2 ** 62), 2 ** 63 - 1], np.int64)
    y = kernels.call("i64_to_f32", offset=8, x=x, y=(x.size,), n=x.size)["y"]
    np.testing.assert_array_equal(y, x.astype(np.float32))


def test_f32_to_i64_truncates_and_saturates(kernels) -> None:  # type: ignore[no-untyped-def]
    x = np.array([0.0, 1.9, -1.9, 3e9, -2.5e18, np.nan, np.inf, -np.inf, 1e30], np.float32)
    raw = kernels.call("f32_to_i64", x=x, y=(2 * x.size,), n=x.size)["y"]
    info = np.iinfo(np.int64)
    expected = [0, 1, -1, 3_000_000_000, int(np.float32(-2.5e18)), 0, info.max, info.min,
                info.max]
    assert raw.view("<i8").tolist() == expected


def test_bool_to_f32(kernels) -> None:  # type: ignore[no-untyped-def]
    x = np.array([True, False, True, True, False], bool)
    y = kernels.call("bool_to_f32", offset=1, x=x, y=(x.size,), n=x.size)["y"]
    np.testing.assert_array_equal(y, x.astype(np.float32))


def test_i64_to_bool_writes_bool_bytes(kernels) -> None:  # type: ignore[no-untyped-def]
    x = np.array([0, 1, -1, 2 ** 40, -(2 ** 63), 0, 7], np.int64)
    y = kernels.call("i64_to_bool", offset=8, x=x, y=kernels.output((x.size,), np.uint8), n=x.size)["y"]
    np.testing.assert_array_equal(y, (x != 0).astype(np.uint8))


_INT32 = np.array([0, 1, -1, 7, 2 ** 31 - 1, -(2 ** 31), 2 ** 24 + 1], np.int32)
_INT64 = np.array([0, 1, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 40 + 5, -(2 ** 63)], np.int64)
_FLOATS = np.array([0.0, -0.0, 1.9, -1.9, 3e9, -3e9, np.nan, np.inf, -np.inf], np.float32)
_BOOLS = np.array([True, False, True, True, False], bool)
# name: (input, what numpy gives for it)
CAST_ROWS = {
    "i32_to_f32": (_INT32, _INT32.astype(np.float32)),
    "f32_to_i32": (_FLOATS, np.array([0, 0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 0, 2 ** 31 - 1,
                                      -(2 ** 31)], np.int32)),
    "i32_to_i64": (_INT32, _INT32.astype(np.int64)),
    "i64_to_i32": (_INT64, _INT64.astype(np.int32)),
    "bool_to_i32": (_BOOLS, _BOOLS.astype(np.int32)),
    "bool_to_i64": (_BOOLS, _BOOLS.astype(np.int64)),
    "i32_to_bool": (_INT32, _INT32 != 0),
    "f32_to_bool": (_FLOATS, _FLOATS.astype(bool)),
}


@pytest.mark.parametrize("name", sorted(CAST_ROWS))
def test_integer_casts(kernels, name: str) -> None:  # type: ignore[no-untyped-def]
    x, want = CAST_ROWS[name]
    want = want.astype(np.uint8) if want.dtype == bool else want
    y = kernels.call(name, offset=8, x=x, y=kernels.output(x.shape, want.dtype), n=x.size)["y"]
    np.testing.assert_array_equal(y, want)


_ELEMENTS = ("float32", "int64", "int32", "int16", "uint16", "int8", "uint8", "bool")
_SAMPLES = {
    "float32": np.array([0.0, -0.0, 0.5, -0.5, 1.9, -1.9, 127.9, 128.0, 200.7, 255.5, 256.0,
                         -129.0, -300.0, 40000.0, 70000.0, -40000.0, 3e9, -3e9, 1e20, np.nan,
                         np.inf, -np.inf], np.float32),
    "int64": np.array([0, 1, -1, 127, 128, 255, 256, -129, 40000, -40000, 70000, 2 ** 31,
                       -(2 ** 31) - 1, 2 ** 40 + 5, -(2 ** 63), 2 ** 63 - 1], np.int64),
    "int32": np.array([0, 1, -1, 127, 128, 255, 256, -129, 40000, -40000, 70000, 2 ** 24 + 1,
                       2 ** 31 - 1, -(2 ** 31)], np.int32),
    "int16": np.array([0, 1, -1, 127, 128, 255, 256, -129, 32767, -32768], np.int16),
    "uint16": np.array([0, 1, 127, 128, 255, 256, 32767, 32768, 65535], np.uint16),
    "int8": np.array([0, 1, -1, 127, -128, 5], np.int8),
    "uint8": np.array([0, 1, 127, 128, 255, 5], np.uint8),
    "bool": np.array([True, False, True, True, False], bool),
}


@pytest.mark.parametrize("source, target", [
    (s, t) for s in _ELEMENTS for t in _ELEMENTS if s != t
    and not (s == "float32" and t in ("int32", "int64"))], ids=lambda d: d)
def test_every_cast_is_numpys(kernels, source: str, target: str) -> None:  # type: ignore[no-untyped-def]
    """numpy's astype on x86 is onnxruntime's Cast: float -> narrow integer goes through a
    truncated int32 (the smallest one when out of range or NaN) and keeps its low bits."""
    from wasm_kernels.abi import find

    x = _SAMPLES[source]
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(target)
    want = want.view(np.uint8) if target == "bool" else want
    y = kernels.call(find("cast", f"{_short(source)}_to_{_short(target)}", dtype=source).name,
                     offset=8, x=x, y=kernels.output(x.shape, want.dtype), n=x.size)["y"]
    np.testing.assert_array_equal(y, want)


def _short(dtype: str) -> str:
    from wasm_kernels.kernel_spec import short

    return short(dtype)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int64"])
def test_byte_gather_moves_rows_of_any_width(kernels, dtype: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    table = rng.integers(0, 200, (7, 3)).astype(dtype)
    index = rng.integers(0, 7, 9).astype(np.int64)
    row = table.itemsize * 3
    y = kernels.call("u8_gather", offset=1, table=table.view(np.uint8), index=index,
                     y=kernels.output((9, row), np.uint8), count=9, rows=7, dim=row)["y"]
    np.testing.assert_array_equal(y.view(dtype), table[index])
