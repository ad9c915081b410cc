"""qconv2d in integers on every kernel provider: bit-exact against a numpy integer conv
written here (int64 accumulation over the zero-point-padded input, then the ABI's f32
requantization), at the qlinear tile edges (output channels around the 8-column panel,
odd pixel counts), with padding, stride 2, dilation, batches, the 1x1 path without im2col,
zero points at the ends of their range, and the forms that stay in float32."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import runtime
import wasm_kernels
from nn import functional as F
from wasm_kernels import abi_quantized, parallel
from wasm_kernels.wasm import read_module

RANGE = {"uint8": (0, 255), "int8": (-128, 127)}


def q(value: Any, dtype: Any = np.float32) -> np.ndarray:
    return np.array(value, dtype)


def _reference(x: np.ndarray, x_scale: float, x_zero: int, w: np.ndarray,
               w_scale: np.ndarray, bias: np.ndarray, out: tuple[float, int] | None,
               stride: int, padding: int, dilation: int, activation: str) -> np.ndarray:
    """The integer conv: acc = sum (x - x_zero) * w + bias in int64 (checked to fit int32),
    then float32(acc) times float32(x_scale * w_scale / out_scale), rounded half to even,
    plus the output zero point, clamped (relu: at the zero point; relu6: also at
    round(6 / out_scale) above it); without an output pair, float32(acc) * (x_scale *
    w_scale)."""
    n, c, h, width = x.shape
    o, _, kh, kw = w.shape
    padded = np.full((n, c, h + 2 * padding, width + 2 * padding), x_zero, np.int64)
    padded[:, :, padding:padding + h, padding:padding + width] = x
    padded -= x_zero
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (width + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    acc = np.zeros((n, o, oh, ow), np.int64) + bias.reshape(1, o, 1, 1)
    for i in range(kh):
        for j in range(kw):
            window = padded[:, :, i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                            j * dilation:j * dilation + stride * (ow - 1) + 1:stride]
            acc += np.einsum("nchw,oc->nohw", window, w[:, :, i, j].astype(np.int64))
    assert np.all(np.abs(acc) < 2 ** 31)
    scale = (np.float32(x_scale) * w_scale.astype(np.float32)).reshape(1, o, 1, 1)
    if out is None:
        real = acc.astype(np.float32) * scale
        return np.clip(real, 0, 6 if activation == "relu6" else None) if activation else real
    out_scale, out_zero = np.float32(out[0]), out[1]
    dtype = x.dtype.name
    low, high = RANGE[dtype]
    if activation:
        low = max(low, out_zero)
    if activation == "relu6":
        high = min(high, int(np.rint(np.float32(6) / out_scale)) + out_zero)
    values = np.rint(acc.astype(np.float32) * (scale / out_scale).astype(np.float32)) + out_zero
    return np.clip(values, low, high).astype(dtype)


def _model(w: np.ndarray, w_scale: np.ndarray, bias: np.ndarray, x_pair: tuple[float, int],
           out: tuple[float, int] | None, dtype: str, **attrs: Any) -> Lambda:
    x_scale, x_zero = q(x_pair[0]), q(x_pair[1], dtype)
    pair = (q(out[0]), q(out[1], dtype)) if out is not None else ()
    return Lambda(lambda x: F.qconv2d(x, x_scale, x_zero, w, w_scale, q(0, np.int8), bias,
                                      *pair, **attrs))


def _imports(wasm: bytes) -> set[str]:
    return {i.name for i in read_module(wasm).imports}


# (dtype, n, c, h, w, o, kernel, stride, padding, dilation, activation, requantized)
CASES = [
    ("uint8", 1, 3, 6, 5, 8, 3, 1, 1, 1, "relu", True),
    ("int8", 1, 5, 9, 7, 9, 3, 2, 1, 1, "relu6", True),
    ("uint8", 2, 7, 5, 5, 17, 1, 1, 0, 1, "", True),
    ("int8", 1, 4, 8, 9, 7, 2, 1, 2, 2, "", True),
    ("uint8", 1, 3, 13, 11, 16, 7, 2, 3, 1, "relu", True),
    ("int8", 1, 6, 7, 7, 10, 1, 2, 0, 1, "", True),
    ("uint8", 2, 4, 6, 6, 9, 3, 1, 1, 1, "relu6", False),
    ("int8", 1, 33, 4, 5, 24, 3, 1, 1, 1, "", False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_qconv2d_is_exact_on_every_provider(case: tuple) -> None:
    dtype, n, c, h, width, o, k, stride, padding, dilation, activation, requantized = case
    rng = np.random.default_rng(n * 100 + c * 10 + o)
    x = rng.integers(*RANGE[dtype], (n, c, h, width), endpoint=True).astype(dtype)
    w = rng.integers(-128, 127, (o, c, k, k), endpoint=True).astype(np.int8)
    w_scale = rng.uniform(0.001, 0.01, o).astype(np.float32)
    bias = rng.integers(-3000, 3000, o).astype(np.int32)
    x_pair = (0.02, int(rng.integers(*RANGE[dtype])))
    out = (0.3, int(rng.integers(*RANGE[dtype])) // 2) if requantized else None
    attrs = {"stride": stride, "padding": padding, "dilation": dilation,
             "activation": activation}
    model = _model(w, w_scale, bias, x_pair, out, dtype, **attrs)
    wasm = modelc.export(model, (x,))
    im2col = "qu8_transpose" if (k, stride) == (1, 1) else "qu8_im2col"
    assert {im2col, "f32_conv2d"} & _imports(wasm) == {im2col}
    expected = _reference(x, *x_pair, w, w_scale, bias, out, stride, padding, dilation,
                          activation)
    np.testing.assert_array_equal(np.asarray(model(x)), expected)  # eager nn agrees
    for provider in PROVIDERS:
        with runtime.load(wasm, kernels=provider) as session:
            got = session.run({"input0": x})["output0"]
        np.testing.assert_array_equal(got, expected, err_msg=provider)


@pytest.mark.parametrize("dtype, x_value, x_zero, w_value", [
    ("uint8", 255, 0, -128), ("uint8", 0, 255, -128), ("int8", 127, -128, -128),
    ("int8", -128, 127, 127)])
def test_zero_points_at_the_ends_of_the_range(dtype: str, x_value: int, x_zero: int,
                                              w_value: int) -> None:
    """Every product at its largest magnitude, 255 * 128, over c * kh * kw = 576 taps, and
    the padding (a tap of x_zero) adding nothing."""
    x = np.full((1, 64, 4, 4), x_value, dtype)
    w = np.full((3, 64, 3, 3), w_value, np.int8)
    w_scale, bias = np.full(3, 1.0, np.float32), np.zeros(3, np.int32)
    model = _model(w, w_scale, bias, (1.0, x_zero), None, dtype, padding=1)
    wasm = modelc.export(model, (x,))
    taps = np.array([[4, 6, 6, 4], [6, 9, 9, 6], [6, 9, 9, 6], [4, 6, 6, 4]]) * 64
    expected = np.broadcast_to(taps * (x_value - x_zero) * w_value, (1, 3, 4, 4))
    for provider in PROVIDERS:
        with runtime.load(wasm, kernels=provider) as session:
            got = session.run({"input0": x})["output0"]
        np.testing.assert_array_equal(got, expected.astype(np.float32), err_msg=provider)


@pytest.mark.parametrize("what, groups, w_zero, channels", [
    ("grouped", 2, 0, 4), ("asymmetric weight", 1, 3, 4),
    ("past the accumulation bound", 1, 0, abi_quantized.QLINEAR_MAX_K // 9 + 1)])
def test_other_forms_stay_in_float(what: str, groups: int, w_zero: int,
                                   channels: int) -> None:
    x = np.random.default_rng(1).integers(0, 256, (1, channels, 3, 3)).astype(np.uint8)
    w = np.ones((2, channels // groups, 3, 3), np.int8)
    model = Lambda(lambda a: F.qconv2d(a, q(0.02), q(128, np.uint8), w, q(0.01),
                                       q(w_zero, np.int8), groups=groups, padding=1))
    wasm = modelc.export(model, (x,))
    assert {"qu8_im2col", "f32_conv2d"} & _imports(wasm) == {"f32_conv2d"}, what
    with runtime.load(wasm, kernels="host") as session:
        got = session.run({"input0": x})["output0"]
    np.testing.assert_allclose(got, model(x), rtol=1e-5, atol=1e-4)


# (dtype, n, c, multiplier, h, w, kernel, stride, padding, activation, requantized)
DEPTHWISE = [
    ("uint8", 1, 8, 1, 7, 9, 3, 1, 1, "relu6", True),
    ("int8", 2, 5, 1, 10, 11, 3, 2, 1, "relu", True),
    ("uint8", 1, 4, 2, 9, 8, 5, 2, 2, "", True),
    ("uint8", 1, 6, 1, 5, 5, 3, 2, 0, "relu6", False),
]


@pytest.mark.parametrize("case", DEPTHWISE, ids=lambda c: "-".join(map(str, c)))
def test_depthwise_runs_the_depthwise_kernel_within_one_step(case: tuple) -> None:
    """A depthwise qconv2d (groups == c) runs the depthwise family: requantized, its
    quantized row (dequantize, f32 tiles, quantize in one call), else dequantize -> the f32
    depthwise kernel. Within one output step of the integer reference (float rounding may
    move a value across a rounding boundary); not requantized, equal but for float error."""
    dtype, n, c, multiplier, h, width, k, stride, padding, activation, requantized = case
    rng = np.random.default_rng(c * 10 + k)
    x = rng.integers(*RANGE[dtype], (n, c, h, width), endpoint=True).astype(dtype)
    w = rng.integers(-128, 127, (c * multiplier, 1, k, k), endpoint=True).astype(np.int8)
    w_scale = rng.uniform(0.001, 0.01, c * multiplier).astype(np.float32)
    bias = rng.integers(-3000, 3000, c * multiplier).astype(np.int32)
    x_pair = (0.02, int(rng.integers(*RANGE[dtype])))
    out = (0.05, int(rng.integers(*RANGE[dtype])) // 2) if requantized else None
    attrs = {"stride": stride, "padding": padding, "groups": c, "activation": activation}
    wasm = modelc.export(_model(w, w_scale, bias, x_pair, out, dtype, **attrs), (x,))
    prefix = {"uint8": "qu8", "int8": "qs8"}[dtype] if requantized else "f32"
    kernel = "_".join((f"{prefix}_depthwise_conv2d", *([activation] if activation else [])))
    assert {kernel, "f32_conv2d", "qu8_im2col"} & _imports(wasm) == {kernel}
    expected = np.concatenate([_reference(
        x[:, g:g + 1], *x_pair, w[g * multiplier:(g + 1) * multiplier],
        w_scale[g * multiplier:(g + 1) * multiplier],
        bias[g * multiplier:(g + 1) * multiplier], out, stride, padding, 1, activation)
        for g in range(c)], axis=1)
    for provider in PROVIDERS:
        with runtime.load(wasm, kernels=provider) as session:
            got = session.run({"input0": x})["output0"]
        if requantized:
            steps = np.abs(got.astype(np.int32) - expected.astype(np.int32))
            assert steps.max() <= 1, provider
            assert np.mean(steps) < 0.05, provider
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-3, err_msg=provider)


@pytest.mark.parametrize("kernels", wasm_kernels.ISA_NAMES)
@pytest.mark.parametrize("dtype, stride", [("uint8", 1), ("int8", 2)])
def test_quantized_depthwise_splits_across_threads_bit_for_bit(kernels: str, dtype: str,
                                                               stride: int) -> None:
    """A requantized depthwise qconv2d over its threshold (one image) runs its channels on
    several threads, each part on its own scratch plane, and equals one thread bit for
    bit (x and y are bytes: each part starts at its first channel's byte)."""
    c, h, width = 37, 45, 46
    rng = np.random.default_rng(stride)
    x = rng.integers(*RANGE[dtype], (1, c, h, width), endpoint=True).astype(dtype)
    w = rng.integers(-128, 127, (c, 1, 3, 3), endpoint=True).astype(np.int8)
    w_scale = rng.uniform(0.001, 0.01, c).astype(np.float32)
    bias = rng.integers(-3000, 3000, c).astype(np.int32)
    x_pair, out = (0.02, int(rng.integers(*RANGE[dtype]))), (0.05, 3)
    wasm = modelc.export(_model(w, w_scale, bias, x_pair, out, dtype, stride=stride,
                                padding=1, groups=c, activation="relu6"), (x,))
    kernel = f"{'qu8' if dtype == 'uint8' else 'qs8'}_depthwise_conv2d_relu6"
    assert kernel in _imports(wasm) & parallel.splits(kernels).keys()
    with runtime.load(wasm, kernels=kernels, threads=1, instances=1) as one:
        want = one.run({"input0": x})["output0"]
    with runtime.load(wasm, kernels=kernels, threads=3, instances=1) as many:
        for _ in range(10):
            np.testing.assert_array_equal(many.run({"input0": x})["output0"], want)
