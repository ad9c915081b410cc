"""The op-case table: one row per op of ``modelc.ops`` (and more for variants), each a
small function of seeded inputs written with ``nn.functional``.

``tests/e2e/test_op_cases.py`` runs every row on every executor (the interpreter and each
kernel provider) against eager ``nn`` on the same inputs, and checks that every op has a
row. A row's name starts with the op it is for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nn import functional as F

RNG = np.random.default_rng(0)
TABLE = RNG.standard_normal((11, 6)).astype(np.float32)
GAMMA = RNG.standard_normal(6).astype(np.float32)
BETA = RNG.standard_normal(6).astype(np.float32)
MEAN = RNG.standard_normal(6).astype(np.float32)
VAR = RNG.uniform(0.5, 2, 6).astype(np.float32)
WEIGHT = RNG.standard_normal((5, 6)).astype(np.float32)
BIAS = RNG.standard_normal(5).astype(np.float32)
FILTERS = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
FILTER_BIAS = RNG.standard_normal(4).astype(np.float32)
DEPTHWISE_FILTERS = RNG.standard_normal((6, 1, 3, 3)).astype(np.float32)
UP_FILTERS = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
W_HH = (RNG.standard_normal((12, 3)) * 0.5).astype(np.float32)  # 4 gates of hidden 3
B_HH = RNG.standard_normal(12).astype(np.float32)
FILTERS_3D = RNG.standard_normal((4, 2, 3, 2, 3)).astype(np.float32)


def x(*shape: int, scale: float = 1.0) -> np.ndarray:
    """Seeded standard-normal float32 input of ``shape``, times ``scale``."""
    rng = np.random.default_rng(sum(shape) + len(shape))
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def int8(*shape: int) -> np.ndarray:
    """Seeded int8 input of ``shape`` over the whole int8 range."""
    return np.random.default_rng(sum(shape) + 1).integers(-128, 128, shape, dtype=np.int8)


def positive(*shape: int) -> np.ndarray:
    """Seeded float32 input of ``shape`` in [0.1, 3)."""
    return np.abs(x(*shape)) + np.float32(0.1)


@dataclass(frozen=True)
class Case:
    """One row: ``fn(*inputs)``; ``dynamic`` names symbolic axes as ``modelc.export`` takes
    them; the result must match eager ``nn`` within ``rtol``/``atol``."""

    fn: Callable[..., Any]
    inputs: tuple[np.ndarray, ...]
    dynamic: dict[str, dict[int, tuple[str, int, int]]] = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-5


BATCH = {"input0": {0: ("batch", 1, 3)}}
BATCH2 = {**BATCH, "input1": {0: ("batch", 1, 3)}}


def _unary(op: str, *shape: int, domain: Callable[..., np.ndarray] = x) -> Case:
    return Case(getattr(F, op), (domain(*shape),), BATCH)


# Quantized ops (issue #14): a scale and zero point per tensor (0-d arrays) or per channel.
def q(value: float, dtype: type = np.float32) -> np.ndarray:
    """A 0-d array: a per-tensor scale or zero point."""
    return np.array(value, dtype)


W_SCALE = (np.abs(WEIGHT).max(axis=1) / 127).astype(np.float32)
W_Q = np.rint(WEIGHT / W_SCALE[:, None]).astype(np.int8)
F_SCALE = (np.abs(FILTERS).reshape(4, -1).max(axis=1) / 127).astype(np.float32)
F_Q = np.rint(FILTERS / F_SCALE[:, None, None, None]).astype(np.int8)
BIAS_Q = np.rint(BIAS / (0.04 * W_SCALE)).astype(np.int32)
U8, S8 = (q(0.04), q(120, np.uint8)), (q(0.03), q(-5, np.int8))
TABLE_Q = np.arange(88, dtype=np.uint8).reshape(11, 8) * 3


def _quantized(a: np.ndarray, pair: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return F.quantize_linear(a, *pair)


CASES: dict[str, Case] = {
    # elementwise unary ops, each its own kernel
    **{op: _unary(op, 2, 3, 5) for op in ("abs", "neg", "relu", "relu6", "exp", "tanh", "erf",
                                          "sigmoid", "silu", "gelu", "gelu_tanh",
                                          "hardswish")},
    "gelu_tanh_tails": Case(F.gelu_tanh, (x(4, 9, scale=30.0),)),
    "round_ties": Case(F.round, (np.arange(-12, 12, dtype=np.float32).reshape(3, 8) / 4,),
                       BATCH),
    "sin_range": Case(F.sin, (x(3, 7, scale=100.0),), rtol=0, atol=1e-5),
    "relu6_range": Case(F.relu6, (x(3, 7, scale=5.0),)),
    "hardswish_range": Case(F.hardswish, (x(4, 9, scale=4.0),)),
    **{op: _unary(op, 2, 3, 5, domain=lambda *shape: x(*shape, scale=3.0))
       for op in ("sin", "cos", "floor", "ceil", "round")},
    # trigonometric and hyperbolic composites (sin, cos, exp, log, sqrt and arithmetic)
    "sin_tan_atan_asin_acos": Case(lambda a: F.tan(a) + F.atan(a * 4) + F.asin(F.tanh(a))
                                   + F.acos(F.tanh(a * 2)), (x(3, 7),), atol=1e-5),
    "exp_sinh_cosh_asinh_acosh_atanh": Case(
        lambda a: F.sinh(a) + F.cosh(a) + F.asinh(a * 5) + F.acosh(F.abs(a) + 1)
        + F.atanh(F.tanh(a)), (x(3, 7),), atol=1e-5),
    "ne_eq_isnan_isinf": Case(lambda a: F.cast(F.isnan(F.log(a)), np.float32)
                              + F.cast(F.isinf(F.div(1.0, F.round(a))), np.float32) * 2.0,
                              (x(3, 7, scale=2.0),)),
    "log": _unary("log", 2, 3, 5, domain=positive),
    "sqrt": _unary("sqrt", 2, 3, 5, domain=positive),
    "rsqrt": _unary("rsqrt", 2, 3, 5, domain=positive),
    # binary ops with broadcasting, and scalar operands
    "add": Case(lambda a, b: F.add(a, b), (x(2, 3, 4), x(4))),
    "sub": Case(lambda a, b: F.sub(a, b) - 1.5, (x(2, 3, 4), x(3, 1))),
    "mul": Case(lambda a, b: F.mul(a, b) * 0.5, (x(2, 1, 4), x(3, 4))),
    "div": Case(lambda a, b: F.div(a, b), (x(2, 3, 4), positive(2, 3, 4))),
    "maximum": Case(lambda a, b: F.maximum(a, b), (x(2, 3, 4), x(1, 3, 1))),
    "minimum": Case(lambda a, b: F.minimum(a, 0.25) + F.minimum(a, b), (x(2, 3, 4), x(4))),
    "pow_constants": Case(lambda a: F.pow(a, 2) - F.pow(a, 3) + F.pow(F.abs(a) + 0.5, -1.5)
                          + F.pow(F.abs(a) + 0.1, 0.3) + F.pow(a, -2) * 1e-3, (x(2, 9),)),
    # comparisons (bool results, cast back to float to be compared)
    **{op: Case(lambda a, b, op=op: F.cast(getattr(F, op)(a, b), np.float32),
                (np.round(x(2, 3, 5)), np.round(x(5)))) for op in ("eq", "ne", "lt", "le",
                                                                  "gt", "ge")},
    "lt_ge_masks": Case(lambda a, b: F.cast(F.lt(a, b), np.float32) + F.cast(F.ge(a, 0.25),
                                                                             np.float32) * 2.0,
                        (x(2, 3, 5), x(5))),
    # reductions and row-wise ops
    "sum": Case(lambda a: F.sum(a, 1), (x(2, 3, 4),), BATCH),
    "mean": Case(lambda a: F.mean(a, (1, 2), keepdim=True), (x(2, 3, 4),)),
    "amax": Case(lambda a: F.amax(a, -1), (x(2, 3, 4),)),
    "topk": Case(lambda a: F.topk(a, 2, -1)[0] + F.cast(F.topk(a, 3, 1, False)[1],
                                                          np.float32).sum(),
                 (x(2, 4, 5),)),
    "softmax": Case(lambda a: F.softmax(a, -1), (x(2, 3, 7),), BATCH),
    "softmax_inner_axes": Case(lambda a: F.softmax(a, 1) + F.softmax(a, 0) * F.softmax(a, -1),
                               (x(3, 4, 5),), BATCH),
    "log_softmax": Case(lambda a: F.log_softmax(a, -1) + F.log_softmax(a, 1), (x(2, 3, 7),),
                        BATCH),
    "layer_norm": Case(lambda a: F.layer_norm(a, (6,), GAMMA, BETA), (x(2, 3, 6),), BATCH),
    "rsqrt_rms_norm": Case(lambda a: a * F.rsqrt(F.mean(F.pow(a, 2), -1, keepdim=True) + 1e-6),
                     (x(2, 3, 8),), {"input0": {0: ("batch", 1, 4)}}),
    "group_norm": Case(lambda a: F.group_norm(a, 3, GAMMA, BETA), (x(2, 6, 4, 3),), BATCH),
    "group_norm_instance": Case(lambda a: F.instance_norm(a), (x(2, 6, 5),)),
    "batch_norm": Case(lambda a: F.batch_norm(F.relu(a), MEAN, VAR, GAMMA, BETA),
                       (x(2, 6, 3, 3),)),
    # matrix products, with fused epilogues
    "linear": Case(lambda a: F.linear(a, WEIGHT, BIAS), (x(3, 6),), BATCH),
    # two groups of 4 rows packed into f32_linear's scratch, a last row read in place
    "linear_packed_rows": Case(lambda a: F.linear(a, WEIGHT, BIAS), (x(9, 6),)),
    "linear_hardswish": Case(lambda a: F.hardswish(F.linear(a, WEIGHT, BIAS)), (x(3, 6),)),
    "linear_residual_gelu": Case(lambda a, r: F.gelu(F.linear(a, WEIGHT) + r),
                                 (x(3, 6), x(3, 5))),
    "matmul": Case(lambda a, b: F.matmul(a, b), (x(3, 4), x(4, 5))),
    "head_attention": Case(lambda q, k, v: F.permute(F.matmul(F.softmax(F.matmul(
        F.permute(q, (0, 2, 1, 3)), F.permute(k, (0, 2, 3, 1))), -1),
        F.permute(v, (0, 2, 1, 3))), (0, 2, 1, 3)), (x(2, 5, 2, 4), x(2, 5, 2, 4), x(2, 5, 2, 4))),
    # two whole 8-column panels of B packed into f32_gemm's scratch, 3 columns read in place
    "matmul_packed_panels": Case(lambda a, b: F.matmul(a, b), (x(5, 18), x(18, 19))),
    "matmul_mask_rows": Case(lambda q, k, mask: F.matmul(q, k) + mask,
                             (x(2, 3, 5, 4), x(2, 3, 4, 6), x(2, 1, 1, 6))),
    "matmul_shared_b_bias": Case(lambda q, k, bias: F.relu(F.matmul(q, k) + bias),
                                 (x(2, 3, 5, 4), x(4, 7), x(7))),
    # convolutions and pooling
    "conv2d": Case(lambda a: F.conv2d(a, FILTERS, FILTER_BIAS, padding=1), (x(2, 3, 6, 5),)),
    "conv2d_hardswish": Case(lambda a: F.hardswish(F.conv2d(a, FILTERS, FILTER_BIAS)),
                             (x(1, 3, 7, 6),)),
    "conv2d_residual_silu": Case(lambda a, r: F.silu(F.conv2d(a, FILTERS, FILTER_BIAS) + r),
                                 (x(1, 3, 5, 5), x(1, 4, 3, 3))),
    # depthwise (the depthwise family): multiplier 2 at stride 2 with relu6; with a residual
    # (no depthwise row: the general conv kernel)
    "conv2d_depthwise_relu6": Case(lambda a: F.relu6(F.conv2d(
        a, DEPTHWISE_FILTERS, FILTER_BIAS[:3].repeat(2), stride=2, padding=1, groups=3)),
        (x(2, 3, 9, 11),)),
    "conv2d_depthwise_residual": Case(lambda a, r: F.conv2d(
        a, DEPTHWISE_FILTERS[:3], None, padding=1, groups=3) + r, (x(1, 3, 6, 7), x(1, 3, 6, 7))),
    "conv_transpose2d": Case(lambda a: F.conv_transpose2d(a, UP_FILTERS, stride=2, padding=1),
                             (x(1, 3, 4, 5),)),
    # Winograd F(2x2, 3x3) transforms (modelc.passes.winograd_convs): an odd output crops
    "winograd_input": Case(F.winograd_input, (x(2, 3, 6, 8),)),
    "winograd_input_padded": Case(lambda a: F.winograd_input(a, (1, 1), (5, 6)),
                                  (x(1, 3, 9, 11),)),
    "winograd_input_tile4": Case(lambda a: F.winograd_input(a, (1, 0), (2, 3), tile=4),
                                 (x(2, 3, 9, 13),)),
    "winograd_output_tile4_relu": Case(lambda m: F.relu(F.winograd_output(
        m, FILTER_BIAS, batch=2, size=(5, 7), tile=4)), (x(1, 144, 1, 8),)),
    "winograd_output_relu": Case(lambda m: F.relu(F.winograd_output(
        m, FILTER_BIAS, batch=2, size=(3, 5))), (x(1, 64, 1, 12),)),
    "winograd_input_dilated": Case(lambda a: F.winograd_input(a, (3, 3), dilation=3),
                                   (x(2, 3, 11, 13),)),
    "winograd_output_tile4_dilated_relu": Case(lambda m: F.relu(F.winograd_output(
        m, FILTER_BIAS, batch=2, size=(7, 9), tile=4, dilation=2)), (x(1, 144, 1, 12),)),
    "avg_pool2d": Case(lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True,
                                              count_include_pad=False), (x(1, 2, 7, 8),)),
    "max_pool2d": Case(lambda a: F.max_pool2d(a, 3, 2, 1), (x(2, 2, 9, 9),)),
    # separable (rows, then columns): SPPF's 5x5 and SPP's 13x13 at stride 1; an uneven
    # dilated window with ceil_mode's partial windows
    "max_pool2d_sppf": Case(lambda a: F.max_pool2d(a, 5, 1, 2), (x(2, 3, 10, 11),), BATCH),
    "max_pool2d_spp_13": Case(lambda a: F.max_pool2d(a, 13, 1, 6), (x(1, 2, 13, 13),)),
    "max_pool2d_separable_dilated_ceil": Case(lambda a: F.max_pool2d(
        a, (3, 4), (2, 1), (1, 2), dilation=(1, 2), ceil_mode=True), (x(2, 2, 8, 9),)),
    # 3-D: composites of the 2-D ops (a depth im2col into one conv2d; separable pools)
    "conv2d_conv3d_grouped": Case(lambda a: F.conv3d(a, FILTERS_3D, FILTER_BIAS, (2, 1, 1), 1,
                                                     groups=2), (x(2, 4, 5, 6, 5),)),
    "conv_transpose2d_conv_transpose3d": Case(lambda a: F.conv_transpose3d(
        a, FILTERS_3D[:, :2], FILTER_BIAS, (2, 1, 2), (1, 1, 0), (1, 0, 1), 2),
        (x(1, 4, 3, 4, 3),)),
    "max_pool2d_max_pool3d": Case(lambda a: F.max_pool3d(a, (2, 3, 3), 2, (1, 1, 0),
                                                         ceil_mode=True), (x(1, 2, 5, 7, 6),)),
    "avg_pool2d_avg_pool3d": Case(lambda a: F.avg_pool3d(a, 3, (1, 2, 2), 1,
                                                         count_include_pad=False),
                                  (x(2, 3, 4, 6, 5),)),
    "adaptive_avg_pool2d": Case(lambda a: F.adaptive_avg_pool2d(a, (2, 3)), (x(1, 2, 4, 9),)),
    # resizing
    "resample_bilinear": Case(lambda a: F.interpolate(a, scale_factor=2, mode="bilinear"),
                              (x(1, 2, 3, 4),), BATCH),
    "resample_nearest_last_axis": Case(lambda a: F.interpolate(a, size=(4, 13)),
                                       (x(2, 3, 4, 5),), BATCH),
    "resample_bicubic_shrink": Case(lambda a: F.interpolate(a, size=(3, 2), mode="bicubic"),
                                    (x(1, 2, 7, 6),)),
    # gathers, casts, selection
    "embedding": Case(lambda ids: F.embedding(ids, TABLE) * 2.0,
                      (np.array([[1, 0, 10], [3, 3, 7]], np.int64),)),
    "cast_i64_f32": Case(lambda ids: F.cast(ids, np.float32) + 0.5,
                         (np.array([[5, -3, 30521]], np.int64),)),
    "cast_bool_f32": Case(lambda m: F.cast(m, np.float32) * 3.0,
                          (np.array([[True, False, True]]),)),
    "cast_i64_bool": Case(lambda ids: F.where(F.cast(ids, np.bool_), 1.5, -0.5),
                          (np.array([[0, 3, -1, 0, 2 ** 40]], np.int64),)),
    "check": Case(lambda a, b: F.check(a * 2.0, F.lt(F.sum(b), 100.0)), (x(2, 3), x(4))),
    "where": Case(lambda m, a: F.where(m, a, -1.5), (np.array([[True, False, True]]), x(2, 3))),
    # movement
    "reshape": Case(lambda a: F.reshape(F.relu(a), (3, 8)) + 1.0, (x(2, 3, 4),)),
    "permute": Case(lambda a: F.permute(a, (2, 0, 1)) * 2.0, (x(2, 3, 4),)),
    "concat": Case(lambda a: F.concat([F.relu(a), a, F.neg(a)], 1), (x(2, 3, 4),), BATCH),
    # int8 tensors with their own (scale, zero point), TFLite's integer Add and Concat
    "qadd": Case(lambda a, b: F.qadd(a, b, 0.05, 3, 0.02, -7, 0.06, -2, low=-2),
                 (int8(2, 3, 8), int8(2, 3, 8)[::-1].copy()), BATCH2),
    "qconcat": Case(lambda a, b: F.qconcat([a, b, a], [0.05, 0.02, 0.06], [3, -7, -2], 0.06,
                                           -2, dim=1), (int8(2, 3, 4), int8(2, 5, 4)), BATCH2),
    "split_slice": Case(lambda a: F.split(a, [1, 3], 2)[1] + F.slice(a, 2, 1, None, 1),
                        (x(2, 3, 4, 5),)),
    "slice_last": Case(lambda a: F.slice(a, -1, 1, 7, 3), (x(3, 8),),
                       {"input0": {0: ("rows", 1, 4)}}),
    "pad_crop": Case(lambda a: F.pad(a, (2, -1, 1, 0), value=0.25), (x(2, 3, 4, 5),)),
    "full": Case(lambda a: a + F.full((a.shape[0], 1), 0.5), (x(3, 4),), BATCH),
    # recurrences over the projected inputs (T, B, gates * hidden) of a symbolic length
    "lstm": Case(lambda g, h0, c0: sum(F.lstm(g, W_HH, h0, c0, reverse=True)),
                 (x(5, 2, 12), x(2, 3), x(2, 3)), {"input0": {0: ("steps", 1, 9)}}),
    # one step of an unrolled LSTM (DynamicQuantizeLSTM), with h's dynamic quantization
    "lstm_step": Case(lambda g, c: sum(F.lstm_step(g, c)), (x(2, 12, scale=2), x(2, 3)),
                      {name: {0: ("batch", 1, 3)} for name in ("input0", "input1")}),
    "lstm_step_quantize": Case(lambda g, c: (lambda h, c, *q: h + c + F.dequantize_linear(*q))(
        *F.lstm_step(g, c, quantize=True)), (x(3, 80, scale=2), x(3, 20))),
    "gru": Case(lambda g: sum(F.gru(g, W_HH[:9], B_HH[:9])), (x(5, 2, 9),),
                {"input0": {0: ("steps", 1, 9)}}),
    "gru_reset_first": Case(lambda g: sum(F.gru(g, W_HH[:9], B_HH[:9], reverse=True,
                                                linear_before_reset=False)),
                            (x(4, 3, 9),)),
    "rnn_relu_lengths": Case(lambda g: sum(F.rnn(g, W_HH[:3], lengths=np.array([4, 2]),
                                                 nonlinearity="relu")), (x(4, 2, 3),)),
    "topk_smallest_middle": Case(lambda a: F.topk(a, 3, 1, largest=False)[0] + 1.0,
                                 (x(2, 5, 4),)),
    "topk_indices": Case(lambda a: F.cast(F.topk(a, 2)[1], np.float32), (x(3, 7),), BATCH),
    "non_max_suppression": Case(lambda b, s: sum(F.cast(v, np.float32) for v in (
        F.non_max_suppression(b, s, 5, 0.3, 0.0))), (x(2, 12, 4), x(2, 3, 12))),
    "check_input_flag": Case(lambda a, ok: F.check(a, ok) * 2.0, (x(2, 3), np.array([True]))),
    # a scan over 6 rows with a state, an outer tensor and a per-row output
    "loop": Case(lambda s, rows, w: sum(F.loop(None, [s], [rows], [w], _scan_body())),
                 (x(4), x(6, 4), x(4))),
    # quantized: f32 in, f32 out; requantized results may differ by one step of their scale
    "quantize_linear": Case(lambda a: F.dequantize_linear(_quantized(a, U8), *U8),
                            (x(3, 7, scale=3.0),), BATCH),
    "quantize_linear_per_axis": Case(
        lambda a: F.dequantize_linear(F.quantize_linear(a, q([0.02, 0.05, 0.1]), q(
            [-3, 0, 7], np.int8), axis=1), q([0.02, 0.05, 0.1]), q([-3, 0, 7], np.int8),
            axis=1), (x(2, 3, 5, scale=3.0),)),
    "dequantize_linear": Case(lambda a: F.dequantize_linear(_quantized(a, S8), *S8) * 2.0,
                              (x(4, 5, scale=3.0),)),
    "dynamic_quantize_linear": Case(lambda a: F.dequantize_linear(*F.dynamic_quantize_linear(a)),
                                    (x(3, 9),), BATCH),
    "qlinear": Case(lambda a: F.dequantize_linear(F.qlinear(
        _quantized(a, U8), *U8, W_Q, W_SCALE, q(0, np.int8), BIAS_Q, q(0.05),
        q(100, np.uint8), activation="relu"), q(0.05), q(100, np.uint8)),
        (x(3, 6),), BATCH),
    "qlinear_int8_relu6": Case(lambda a: F.qlinear(
        _quantized(a, S8), *S8, W_Q, W_SCALE, q(0, np.int8), BIAS, activation="relu6"),
        (x(3, 2, 6),)),
    "qlinear_dynamic": Case(lambda a: F.qlinear(*F.dynamic_quantize_linear(a), W_Q, W_SCALE,
                                                q(0, np.int8), BIAS), (x(3, 6),), BATCH),
    "qconv2d": Case(lambda a: F.dequantize_linear(F.qconv2d(
        _quantized(a, U8), *U8, F_Q, F_SCALE, np.zeros(4, np.int8), None, q(0.1),
        q(90, np.uint8), padding=1, activation="relu"), q(0.1), q(90, np.uint8)),
        (x(2, 3, 6, 5),), atol=0.1 + 1e-5),
    "embedding_quantized": Case(lambda ids: F.dequantize_linear(F.embedding(ids, TABLE_Q), *U8),
                                (np.array([[3, 0, 10], [7, 7, 1]], np.int64),)),
    "qmatmul": Case(lambda a, b: F.qmatmul(_quantized(a, U8), *U8, _quantized(b, S8), *S8),
                    (x(2, 3, 4), x(2, 4, 5)), atol=1e-3),
}


def _scan_step(i: Any, states: list[Any], elements: list[Any], outer: list[Any]
               ) -> tuple[list[Any], list[Any]]:
    """One row of the ``loop`` row's scan: ``s = tanh(s / 2 + row * w)``, out ``2 s``."""
    state = F.tanh(F.add(F.mul(states[0], 0.5), F.mul(elements[0], outer[0])))
    return [state], [F.mul(state, 2.0)]


@functools.cache
def _scan_body() -> Any:
    """``_scan_step`` as a compiled loop body (its Python function stays the eager one)."""
    from modelc.ops.loop import Body

    spec = ((4,), "float32")
    return Body.trace(_scan_step, [spec], [spec], [spec])
