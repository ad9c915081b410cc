"""The vectorised transcendental functions over the whole float range: NaN, +-inf, +-0,
denormals, the overflow edges, and random bit patterns, within ``vmath.MAX_ERROR`` (and
``vmath.MAX_ULPS``)."""

import numpy as np
import pytest

from wasi_intrinsics.kernel_math import unary
from wasm_kernels.templates.vmath import (
    MAX_ERROR,
    MAX_ULPS,
    PERIODIC_MAX_ERROR,
    PERIODIC_RANGE,
    ULP_FLOOR,
)

TINY = np.float32(1.401298464324817e-45)
EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, TINY, -TINY, 1.1754942e-38, 1.1754944e-38,
                  -1.1754944e-38, 3.4028235e38, -3.4028235e38, 88.72283, 88.72284, 89.0, -87.33654,
                  -87.33655, -103.27893, -103.97208, -104.0, -150.0, 0.5, 0.625, -0.625,
                  1e-8, -1e-8, 9.0, 10.0, -10.0, 1.0, 2.0], np.float32)


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(6)
    bits = rng.integers(0, 2**32, 60_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    dense = rng.uniform(-20, 20, 40_000).astype(np.float32)
    return np.concatenate([EDGES, bits, dense])


def max_errors(y: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """(relative, absolute) error of the finite mismatches beyond 4 denormal steps."""
    finite = np.isfinite(expected) & np.isfinite(y)
    diff = np.abs(y[finite].astype(np.float64) - expected[finite])
    loose = diff > 4 * TINY
    rel = diff / np.maximum(np.abs(expected[finite]), 1e-300)
    return float(rel[loose].max(initial=0)), float(diff[loose].max(initial=0))


def _run_over_all_floats(kernels, op: str):  # type: ignore[no-untyped-def]
    """``f32_<op>`` on ``_inputs()``, the float64 reference and it rounded to float32:
    (x, y, expected, rounded)."""
    x = _inputs()
    y = kernels.call(f"f32_{op}", x=x, y=x.shape, n=x.size)["y"]
    with np.errstate(all="ignore"):
        expected = unary(op, x)
        return x, y, expected, expected.astype(np.float32)


@pytest.mark.parametrize("op", sorted(MAX_ERROR))
def test_max_error_over_all_floats(kernels, op: str) -> None:  # type: ignore[no-untyped-def]
    x, y, expected, rounded = _run_over_all_floats(kernels, op)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(rounded), err_msg=f"{op}: NaN places")
    infinite = np.isinf(rounded)
    np.testing.assert_array_equal(y[infinite], rounded[infinite], err_msg=f"{op}: infinities")
    rel_limit, abs_limit = MAX_ERROR[op]
    finite = np.isfinite(rounded) & np.isfinite(y)
    diff = np.abs(y[finite].astype(np.float64) - expected[finite])
    ok = (diff <= rel_limit * np.abs(expected[finite])) | (diff <= abs_limit) | (diff <= 4 * TINY)
    worst = np.argmax(np.where(ok, 0, diff))
    assert ok.all(), (f"{op}: x={x[finite][worst]!r} gives {y[finite][worst]!r}, expected "
                      f"{expected[finite][worst]!r}; errors {max_errors(y, expected)}")


@pytest.mark.parametrize("op", sorted(MAX_ULPS))
def test_max_ulps_over_all_floats(kernels, op: str) -> None:  # type: ignore[no-untyped-def]
    x, y, expected, rounded = _run_over_all_floats(kernels, op)
    checked = np.isfinite(rounded) & (np.abs(expected) >= ULP_FLOOR)
    ulp = np.spacing(np.abs(rounded[checked])).astype(np.float64)
    ulps = np.abs(y[checked].astype(np.float64) - expected[checked]) / ulp
    worst = int(np.argmax(ulps))
    assert ulps[worst] <= MAX_ULPS[op], (
        f"{op}: x={x[checked][worst]!r} gives {y[checked][worst]!r}, expected "
        f"{expected[checked][worst]!r}: {ulps[worst]:.2f} ulp")


@pytest.mark.parametrize("op", sorted(PERIODIC_MAX_ERROR))
def test_periodic_max_error_within_range(kernels, op: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    x = np.concatenate([
        EDGES[np.abs(EDGES) <= PERIODIC_RANGE],
        rng.uniform(-PERIODIC_RANGE, PERIODIC_RANGE, 60_000),
        rng.uniform(-10, 10, 40_000),
        np.arange(-2608, 2609) * np.pi / 2,  # the zeros and extrema, where reduction is hardest
    ]).astype(np.float32)
    y = kernels.call(f"f32_{op}", x=x, y=x.shape, n=x.size)["y"]
    expected = unary(op, x)
    error = np.abs(y - expected)
    worst = int(np.argmax(error))
    assert error[worst] <= PERIODIC_MAX_ERROR[op], (
        f"{op}: x={x[worst]!r} gives {y[worst]!r}, expected {expected[worst]!r}")


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_periodic_functions_give_nan_for_nan_and_infinities(kernels, op: str) -> None:  # type: ignore[no-untyped-def]
    x = np.array([np.nan, np.inf, -np.inf, 0.0], np.float32)
    y = kernels.call(f"f32_{op}", x=x, y=x.shape, n=x.size)["y"]
    assert np.isnan(y[:3]).all()
    assert abs(y[3] - (0.0 if op == "sin" else 1.0)) <= PERIODIC_MAX_ERROR[op]


@pytest.mark.parametrize("op", ["floor", "ceil", "round"])
def test_rounding_is_exact(kernels, op: str) -> None:  # type: ignore[no-untyped-def]
    x = np.concatenate([EDGES, np.arange(-20, 20) / 4, [2.5, -2.5, 0.5, -0.5, 1.5, 8388609.0]]
                       ).astype(np.float32)
    y = kernels.call(f"f32_{op}", x=x, y=x.shape, n=x.size)["y"]
    np.testing.assert_array_equal(y, unary(op, x))
