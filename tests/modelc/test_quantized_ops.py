"""The quantized ops' shape and dtype rules and lowering limits: each bad input is refused
with a message naming it and what was expected."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from executors import Lambda

import modelc
from modelc.errors import CompileError
from nn import functional as F
from wasm_kernels.pack_quantized import pack_qlinear_weight


def q(value: Any, dtype: Any = np.float32) -> np.ndarray:
    return np.array(value, dtype)


X = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
W = np.arange(-10, 10, dtype=np.int8).reshape(5, 4)
U8 = (q(0.02), q(128, np.uint8))
ZERO_W = q(0, np.int8)


def _trace(fn: Callable[..., Any], *inputs: np.ndarray) -> Any:
    return modelc.trace(Lambda(fn), inputs or (X,))


def _export(fn: Callable[..., Any], *inputs: np.ndarray) -> bytes:
    return modelc.export(Lambda(fn), inputs or (X,))


@pytest.mark.parametrize("fn, message", [
    (lambda a: F.quantize_linear(F.cast(a, np.int32), *U8), "expects a float32 input"),
    (lambda a: F.quantize_linear(a, q(0.1, np.float64), q(0, np.uint8)),
     "scale must be float32 and its zero point int8 or uint8, got float64"),
    (lambda a: F.quantize_linear(a, q([0.1, 0.2]), q([0, 0], np.uint8), axis=1),
     r"must have shapes among \[\[\], \[4\]\], got \[2\]"),
    (lambda a: F.dequantize_linear(F.quantize_linear(a, *U8), q(0.02), q(0, np.int8)),
     "the zero point is int8 but the input is uint8"),
    (lambda a: F.qlinear(F.quantize_linear(a, *U8), *U8, W.T.copy(), q(0.1), ZERO_W),
     r"expects input \(\.\.\., in\) and weight \(out, in\), got \[3, 4\] and \[4, 5\]"),
    (lambda a: F.qlinear(F.quantize_linear(a, *U8), *U8, W, q(0.1), ZERO_W,
                         activation="gelu"), "activation 'gelu' is not one of"),
    (lambda a: F.qlinear(F.quantize_linear(a, *U8), *U8, W, q(0.1), ZERO_W,
                         np.zeros(5, np.float32), *U8),
     "a requantized output takes an int32 bias"),
    (lambda a: F.qlinear(F.quantize_linear(a, *U8), *U8, W, q(0.1), ZERO_W,
                         np.zeros(4, np.int32)), r"bias must be int32 or float32 of shape \[5\]"),
    (lambda a: F.qmatmul(F.quantize_linear(a, *U8), *U8, W.astype(np.float32), q(0.1), ZERO_W),
     "qmatmul: other must be int8 or uint8, got float32"),
    (lambda a: F.qmatmul(F.quantize_linear(a, *U8), *U8, W, q(0.1), ZERO_W),
     r"qmatmul: matmul: inner dims differ: \[3, 4\] @ \[5, 4\]"),
])
def test_bad_operands_are_named(fn: Callable[..., Any], message: str) -> None:
    with pytest.raises(CompileError, match=message):
        _trace(fn)


@pytest.mark.parametrize("fn, message", [
    (lambda a: F.qlinear(F.quantize_linear(a, *U8), *U8, W, q(0.1), q(3, np.int8)),
     r"int8 weights with zero point 0 \(symmetric\); got int8 with zero point 3"),
    (lambda a: F.qlinear(F.quantize_linear(a, *U8), *U8, W, q(0.1), ZERO_W, None, q(0.1),
                         q(0, np.int8)),
     r"requantized output lowers in the input's dtype \(uint8\), got int8"),
    (lambda a: F.dequantize_linear(np.arange(3, dtype=np.int32) + F.cast(a[0, :3], np.int32),
                                   q(0.1), q(0, np.int32), axis=0),
     r"dequantize_linear of int32 is not lowered"),
    (lambda a: F.qconv2d(*F.dynamic_quantize_linear(F.reshape(a, (1, 1, 3, 4))),
                         np.ones((2, 1, 2, 2), np.int8), q(0.1), q(1, np.int8),
                         np.zeros(2, np.int32)),
     "int32 bias lowers for a constant input scale"),
])
def test_what_does_not_lower_says_why(fn: Callable[..., Any], message: str) -> None:
    with pytest.raises(CompileError, match=message):
        _export(fn)


def test_what_does_not_lower_still_runs_in_the_interpreter() -> None:
    def fn(a: Any) -> Any:
        return F.qlinear(F.quantize_linear(a, *U8), *U8, W, q(0.1), q(3, np.int8))
    got = modelc.interpret(modelc.optimize(_trace(fn)), {"input0": X})["output0"]
    np.testing.assert_array_equal(got, fn(X))


def test_eager_refuses_an_unknown_activation() -> None:
    with pytest.raises(ValueError, match=r"activation 'gelu' is not one of \['', 'relu'"):
        F.qlinear(np.zeros((1, 4), np.uint8), *U8, W, q(0.1), ZERO_W, activation="gelu")


def test_pack_refuses_what_is_not_an_int8_matrix() -> None:
    with pytest.raises(ValueError, match=r"expects a 2-D int8 weight, got uint8 of shape \[5\]"):
        pack_qlinear_weight(np.zeros(5, np.uint8))
