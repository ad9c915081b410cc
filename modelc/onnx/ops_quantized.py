"""Quantized ONNX ops (issue #14), onto ``nn.functional``'s quantized ops.

What onnxruntime's quantizers emit: ``QuantizeLinear`` / ``DequantizeLinear``,
``DynamicQuantizeLinear`` + ``MatMulInteger`` / ``ConvInteger`` (``quantize_dynamic``), and
``QLinearConv`` / ``QLinearMatMul`` with the com.microsoft ``QGemm``, ``QLinearAdd``,
``QLinearMul``, ``QLinearConcat``, ``QLinearGlobalAveragePool`` and ``QLinearSigmoid``
(``quantize_static`` in the QOperator format). A known right operand of a product becomes
the weight of ``qlinear`` (the integer kernels' layout). ``MatMulInteger`` and
``ConvInteger`` return the int32 accumulator as float32 (``qlinear`` with unit scales,
exact below 2**24 and rounded as the ``Cast`` to float that follows them rounds it).
The com.microsoft element-wise ops run in float32 between a dequantize and a quantize.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from .fold import is_known
from .node import OnnxNode
from .ops_quantized_lstm import dynamic_quantize_lstm
from .window import Window

OpFn = Callable[[OnnxNode], Any]
ONE = np.array(1.0, np.float32)


def _zero_point(n: OnnxNode, index: int, like: Any = None) -> Any:
    """Zero point operand ``index`` (a known one-element one as a scalar), or a 0 of
    ``like``'s dtype (uint8 without one)."""
    if n.has(index):
        zero = n.input(index)
        return zero.reshape(()) if is_known(zero) and zero.size == 1 else zero
    return np.array(0, like.dtype if like is not None and like.dtype != np.float32
                    else np.uint8)


def _triple(n: OnnxNode, first: int) -> tuple[Any, Any, Any]:
    """(tensor, scale, zero point) from operand ``first`` on."""
    x = n.input(first)
    return x, n.input(first + 1), _zero_point(n, first + 2, x)


def _axis(n: OnnxNode) -> int:
    """The per-axis scale's axis; 0 for a per-tensor (one-element) scale, whose ``axis``
    (default 1) ONNX ignores, even past the input's rank."""
    if not n.rank() or math.prod(n.input(1).shape) == 1:
        return 0
    return n.axis(n.attr("axis", 1))


def quantize_linear(n: OnnxNode) -> Any:
    x, scale = n.input(0), n.input(1)
    return F.quantize_linear(x, scale, _zero_point(n, 2), _axis(n))


def dequantize_linear(n: OnnxNode) -> Any:
    x, scale = n.input(0), n.input(1)
    zero = _zero_point(n, 2, x)
    return F.dequantize_linear(x, scale, zero, _axis(n))


def _weight(b: np.ndarray) -> np.ndarray:
    """A known (K, N) right operand as a contiguous (N, K) ``qlinear`` weight."""
    return np.ascontiguousarray(b.T)


def _product(n: OnnxNode, a: tuple, b: tuple, output: tuple = (None, None),
             bias: Any = None) -> Any:
    """``qlinear`` when b is a known 2-D operand, else ``qmatmul`` (no bias then)."""
    (x, xs, xz), (w, ws, wz) = a, b
    if not is_known(x) and is_known(w) and w.ndim == 2:
        return F.qlinear(x, xs, xz, _weight(w), ws, wz, bias, *output)
    if bias is not None:
        raise n.error("a bias needs a known 2-D right operand")
    return F.qmatmul(x, xs, xz, w, ws, wz, *output)


def matmul_integer(n: OnnxNode) -> Any:
    a, b = n.input(0), n.input(1)
    return _product(n, (a, ONE, _zero_point(n, 2, a)), (b, ONE, _zero_point(n, 3, b)))


def qlinear_matmul(n: OnnxNode) -> Any:
    return _product(n, _triple(n, 0), _triple(n, 3), (n.input(6), _zero_point(n, 7)))


def qgemm(n: OnnxNode) -> Any:
    """com.microsoft QGemm: ``A' @ B' + C`` (int32 C); float32 out without y_scale."""
    if n.attr("alpha", 1.0) != 1.0 or n.attr("transA", 0):
        raise n.error("QGemm with alpha != 1 or transA is not supported")
    a, (b, bs, bz) = _triple(n, 0), _triple(n, 3)
    if n.attr("transB", 0):
        b = b.T if is_known(b) else F.permute(b, (1, 0))
    output = (n.input(7), _zero_point(n, 8)) if n.has(7) else (None, None)
    return _product(n, a, (b, bs, bz), output, n.optional(6))


def _conv(n: OnnxNode, a: tuple, w: tuple, output: tuple, bias: Any) -> Any:
    x = a[0]
    if n.rank() != 4:
        raise n.error(f"only 2-D quantized convolutions are supported, got rank {n.rank()}")
    window = Window.of(n, n.attr("kernel_shape") or list(w[0].shape[2:]))
    if not window.symmetric:
        raise n.error(f"uneven pads {window.pads} are not supported for a quantized conv")
    return F.qconv2d(x, a[1], a[2], w[0], w[1], w[2], bias, output[0], output[1],
                     tuple(window.strides), window.padding(), tuple(window.dilations),
                     n.attr("group", 1))


def qlinear_conv(n: OnnxNode) -> Any:
    return _conv(n, _triple(n, 0), _triple(n, 3), (n.input(6), _zero_point(n, 7)),
                 n.optional(8))


def conv_integer(n: OnnxNode) -> Any:
    x, w = n.input(0), n.input(1)
    return _conv(n, (x, ONE, _zero_point(n, 2, x)), (w, ONE, _zero_point(n, 3, w)),
                 (None, None), None)


def _in_float(fn: Callable[..., Any], inputs: int) -> OpFn:
    """A com.microsoft QLinear<Op>: ``inputs`` (X, scale, zero point) triples dequantized,
    ``fn`` in float32, the result quantized with the (scale, zero point) that follows."""
    def run(n: OnnxNode) -> Any:
        values = [F.dequantize_linear(*_triple(n, 3 * i)) for i in range(inputs)]
        return F.quantize_linear(fn(n, *values), n.input(3 * inputs),
                                 _zero_point(n, 3 * inputs + 1))
    return run


def qlinear_concat(n: OnnxNode) -> Any:
    """com.microsoft QLinearConcat(Y_scale, Y_zero_point, X0, X0_scale, X0_zero_point, ...)."""
    count = (len(n.inputs) - 2) // 3
    values = [F.dequantize_linear(*_triple(n, 2 + 3 * i)) for i in range(count)]
    axis = n.axis(n.attr("axis"), len(n.input(2).shape))
    return F.quantize_linear(F.concat(values, axis), n.input(0), _zero_point(n, 1))


def _global_average(n: OnnxNode, x: Any) -> Any:
    if n.attr("channels_last", 0):
        raise n.error("channels_last QLinearGlobalAveragePool is not supported")
    return F.mean(x, dim=tuple(range(2, len(x.shape))), keepdim=True)


OPS: dict[str, OpFn] = {
    "QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear,
    "DynamicQuantizeLinear": lambda n: F.dynamic_quantize_linear(n.input(0)),
    "MatMulInteger": matmul_integer, "QLinearMatMul": qlinear_matmul,
    "ConvInteger": conv_integer, "QLinearConv": qlinear_conv,
}
"""Quantized ops of the default domain."""

MICROSOFT: dict[str, OpFn] = {
    "QGemm": qgemm,
    "QLinearAdd": _in_float(lambda n, a, b: F.add(a, b), 2),
    "QLinearMul": _in_float(lambda n, a, b: F.mul(a, b), 2),
    "QLinearSigmoid": _in_float(lambda n, x: F.sigmoid(x), 1),
    "QLinearGlobalAveragePool": _in_float(_global_average, 1),
    "QLinearConcat": qlinear_concat,
    "DynamicQuantizeLSTM": dynamic_quantize_lstm,
}
"""onnxruntime's com.microsoft quantized ops."""
