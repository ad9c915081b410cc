"""qadd and qconcat (TFLite's integer Add and Concat) bit for bit against a reference of
TFLite's formulas written here in plain Python integers, on the interpreter and every kernel
provider; and the fixed-point helpers the kernels and the host provider share."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from executors import EXECUTORS, Lambda

import modelc
import runtime
from modelc.errors import CompileError
from nn import functional as F
from wasm_kernels import fixed_point

INT32_MIN = -(1 << 31)


def ref_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: real = m * 2**(shift - 31), m in [2**30, 2**31)."""
    q, shift = math.frexp(real)
    m = round(q * (1 << 31))
    if m == 1 << 31:
        m, shift = m // 2, shift + 1
    return m, shift


def ref_srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return (1 << 31) - 1
    ab = a * b
    v = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    q = abs(v) // (1 << 31)  # C division truncates toward zero
    return q if v >= 0 else -q


def ref_rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if (x & mask) > threshold else 0)


def wrap32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def ref_rescale(x: int, real: float) -> int:
    m, shift = ref_multiplier(real)
    return ref_rdbpot(ref_srdhm(wrap32(x * (1 << max(shift, 0))), m), max(-shift, 0))


def ref_qadd(a: np.ndarray, b: np.ndarray, sa: float, za: int, sb: float, zb: int, so: float,
             zo: int, lo: int = -128, hi: int = 127) -> np.ndarray:
    twice = 2 * max(sa, sb)
    out = []
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist()):
        total = ref_rescale((x - za) << 20, sa / twice) + ref_rescale((y - zb) << 20, sb / twice)
        out.append(min(max(ref_rescale(total, twice / ((1 << 20) * so)) + zo, lo), hi))
    return np.array(out, np.int8).reshape(a.shape)


def ref_requantize(q: np.ndarray, s: float, z: int, so: float, zo: int) -> np.ndarray:
    if (s, z) == (so, zo):
        return q
    out = [min(max(ref_rescale(x - z, s / so) + zo, -128), 127) for x in q.ravel().tolist()]
    return np.array(out, np.int8).reshape(q.shape)


def int8(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, shape, dtype=np.int8)


def run(fn: Callable[..., np.ndarray], inputs: tuple[np.ndarray, ...],
        executor: str) -> np.ndarray:
    model = Lambda(fn)
    feeds = {f"input{i}": v for i, v in enumerate(inputs)}
    if executor == "interpreter":
        return modelc.interpret(modelc.optimize(modelc.trace(model, inputs)), feeds)["output0"]
    with runtime.load(modelc.export(model, inputs), kernels=executor) as session:
        return session.run(feeds)["output0"]


ADD_SCALES = [  # (sa, za, sb, zb, so, zo, lo, hi)
    (0.05, 3, 0.02, -7, 0.06, -2, -128, 127),
    (0.1, 0, 0.1, 0, 0.2, 0, -128, 127),            # equal inputs, ties in every rescale
    (0.003, -128, 0.7, 127, 0.0011, 5, -128, 127),  # an output finer than both inputs
    (0.5, 10, 0.25, -3, 0.9, -20, -20, 127),         # a fused ReLU: low = zero point
]


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("params", ADD_SCALES, ids=range(len(ADD_SCALES)))
def test_qadd_is_tflites_add_bit_for_bit(params: tuple, executor: str) -> None:
    sa, za, sb, zb, so, zo, lo, hi = params
    a, b = int8(1, 3, 5, 7), int8(2, 3, 5, 7)
    got = run(lambda x, y: F.qadd(x, y, sa, za, sb, zb, so, zo, low=lo, high=hi), (a, b),
              executor)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, ref_qadd(a, b, sa, za, sb, zb, so, zo, lo, hi))


def test_qadd_approximates_the_real_sum() -> None:
    a, b = int8(3, 4, 50), int8(4, 4, 50)
    got = F.qadd(a, b, 0.05, 3, 0.02, -7, 0.1, 0)
    real = 0.05 * (a.astype(np.float64) - 3) + 0.02 * (b.astype(np.float64) + 7)
    inside = np.abs(real) < 12.5
    assert np.abs(0.1 * got.astype(np.float64) - real)[inside].max() <= 0.05 + 1e-9


@pytest.mark.parametrize("executor", EXECUTORS)
def test_qconcat_copies_matching_inputs_and_rescales_the_others(executor: str) -> None:
    a, b, c = int8(5, 2, 3, 4), int8(6, 2, 1, 4), int8(7, 2, 2, 4)
    scales, zero_points = (0.04, 0.013, 0.04), (-5, 9, -5)
    got = run(lambda x, y, z: F.qconcat([x, y, z], scales, zero_points, 0.04, -5, dim=1),
              (a, b, c), executor)
    expected = np.concatenate([ref_requantize(q, s, z, 0.04, -5)
                               for q, s, z in zip((a, b, c), scales, zero_points)], axis=1)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got[:, :3], a)  # the matching input moved unchanged


@pytest.mark.parametrize("executor", EXECUTORS)
def test_qconcat_saturates_a_wider_input(executor: str) -> None:
    a, b = int8(8, 6, 2), int8(9, 6, 3)
    got = run(lambda x, y: F.qconcat([x, y], [0.5, 0.01], [0, 0], 0.01, 0, dim=-1), (a, b),
              executor)
    expected = np.concatenate([ref_requantize(a, 0.5, 0, 0.01, 0), b], axis=-1)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got[:, :2], np.clip(a.astype(np.int32) * 50, -128, 127))


def test_fixed_point_helpers_match_the_reference() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.integers(INT32_MIN, 1 << 31, 2000),
                        [INT32_MIN, (1 << 31) - 1, 0, -1, 1, 1 << 30, -(1 << 30)]]).astype(np.int32)
    for real in (0.5, 0.001234, 0.99999999, 1.0, 3.7, 1e-9, 2 ** -20):
        m, shift = fixed_point.quantize_multiplier(real)
        assert (m, shift) == ref_multiplier(real)
        assert m == 0 or (1 << 30) <= m < (1 << 31)
        got = fixed_point.multiply_by_quantized_multiplier(x, m, shift)
        assert got.tolist() == [ref_rescale(v, real) for v in x.tolist()]
    assert fixed_point.srdhm(np.int32(INT32_MIN), INT32_MIN) == (1 << 31) - 1
    assert fixed_point.quantize_multiplier(0.0) == (0, 0)


def test_bad_rescale_factors_are_refused() -> None:
    with pytest.raises(ValueError, match=r"finite and >= 0, got -0\.5"):
        fixed_point.quantize_multiplier(-0.5)
    with pytest.raises(ValueError, match=r"got nan"):
        fixed_point.quantize_multiplier(float("nan"))


def test_qadd_errors_name_the_problem() -> None:
    a = int8(1, 2, 3)
    with pytest.raises(TypeError, match=r"qadd: expected an int8 tensor, got float32"):
        F.qadd(a.astype(np.float32), a, 0.1, 0, 0.1, 0, 0.1, 0)
    with pytest.raises(CompileError, match=r"qadd expects int8 operands, got \['int8', 'int32'\]"):
        modelc.trace(Lambda(lambda x, y: F.qadd(x, y, 0.1, 0, 0.1, 0, 0.1, 0)),
                     (a, a.astype(np.int32)))
    with pytest.raises(CompileError, match=r"qadd: scale must be a finite number > 0, got 0"):
        modelc.trace(Lambda(lambda x, y: F.qadd(x, y, 0.1, 0, 0.1, 0, 0, 0)), (a, a))
    with pytest.raises(CompileError, match=r"same-shaped operands only, got \[2, 3\] and \[3\]"):
        modelc.export(Lambda(lambda x, y: F.qadd(x, y, 0.1, 0, 0.1, 0, 0.1, 0)), (a, a[0]))


def test_qconcat_errors_name_the_problem() -> None:
    a = int8(1, 2, 3)
    with pytest.raises(ValueError, match=r"2 tensors need as many scales and zero points, "
                                         r"got 1 and 2"):
        F.qconcat([a, a], [0.1], [0, 0], 0.1, 0)
    with pytest.raises(CompileError, match=r"2 inputs need as many scales and zero points, "
                                           r"got 2 and 1"):
        modelc.trace(Lambda(lambda x, y: F.qconcat([x, y], [0.1, 0.1], [0], 0.1, 0)), (a, a))
    with pytest.raises(CompileError, match=r"qconcat: every scale must be a finite number > 0"):
        modelc.trace(Lambda(lambda x, y: F.qconcat([x, y], [0.1, -1.0], [0, 0], 0.1, 0)),
                     (a, a))
