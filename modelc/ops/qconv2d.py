"""qconv2d: quantized ``conv2d`` (semantics in ``nn/functional/quantized.py``).

In integers when the weight is int8 with zero point 0 (symmetric, as onnxruntime and
``modelc.quantize`` make them), ``groups`` is 1 and a requantized output keeps the input's
dtype: the input is transposed to channels-last (``qu8_transpose``), its window rows, (n *
oh * ow, kh * kw * c) bytes, built by ``qu8_im2col`` in scratch (each tap a run of c bytes;
padding taps hold the input zero point), and the conv is the ``qlinear`` product (int32
accumulation, bias in the accumulator, requantized or dequantized with relu / relu6 fused)
of those rows and the (o, kh * kw * c) int8 weight packed in the module; a 1x1 stride-1
conv without padding needs no im2col: its channels-last input is the rows. The product's
(n, oh * ow, o) rows are transposed into the NCHW output. Accumulation is exact for c * kh
* kw <= ``abi_quantized.QLINEAR_MAX_K`` (longer ones take the float path).

A depthwise conv (``groups == c``) requantized into its input's dtype is one call of the
depthwise family's quantized row (``q{u,s}8_depthwise_conv2d``, ``_depthwise``): it
dequantizes each input plane into its scratch plane, runs the f32 depthwise tiles on the
dequantized constant weight and bias, and quantizes their outputs as it stores them, which
is what the float path below computes, in one pass.

Other forms (grouped convs, asymmetric weights, a float or other-dtype output) run through
float32: the input is dequantized into scratch, the f32 conv kernel (the ``depthwise``
family's for a depthwise conv) runs on the dequantized constant weight
(an int32 bias becomes ``bias * input_scale * weight_scale``, so the input scale must be
constant), with relu / relu6 fused, and a requantized output is quantized from a second
scratch. That result may differ from the integer reference by one quantization step where
float rounding moves a value across a rounding boundary.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from nn.functional.conv import conv_padding
from wasm_kernels import abi
from wasm_kernels.abi_quantized import QLINEAR_MAX_K
from wasm_kernels.pack import pack_conv_weight

from ..errors import CompileError
from . import OpDef, _depthwise
from ._qgemm import call_qlinear, scratch_shapes, symmetric
from ._qproduct import check_operands, optional, result_dtype
from ._quantized import FLOAT, QUANTIZED, dequantize, per_channel, quantize, real
from ._shapes import pair, require_constant_weight, require_static, window_out

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


class QConv2d(OpDef):
    name = "qconv2d"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        x, w = shapes[0], shapes[3]
        groups = attrs.get("groups", 1)
        if len(x) != 4 or len(w) != 4 or x[1] != w[1] * groups:
            raise CompileError(f"qconv2d expects input (N, C, H, W) and weight (O, C / groups, "
                               f"KH, KW) with groups={groups}, got {list(x)} and {list(w)}")
        require_static(x, (1, 2, 3), self.name)
        check_operands(self.name, shapes, dtypes, w[0], ("input", "weight"))
        bias, output = optional(shapes, dtypes, has_bias=True)
        dtype = result_dtype(self.name, bias, output, w[0], attrs)
        stride, dilation = pair(attrs.get("stride", 1)), pair(attrs.get("dilation", 1))
        pads = conv_padding(attrs.get("padding", 0), (w[2], w[3]), stride, dilation)
        out = tuple(window_out(x[2 + i], w[2 + i], stride[i], sum(pads[i]), dilation[i])
                    for i in range(2))
        return [((x[0], w[0]) + out, dtype)]

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        if not self._integer(node):
            # the depthwise kernels' padded plane; the float path's dequantized input and
            # f32 output before it
            plane = ((_depthwise.scratch_floats(_depthwise.geometry(
                node, node.inputs[0], node.inputs[3])),),) if self._depthwise(node) else ()
            if self._fused(node) is not None:
                return plane
            return (node.inputs[0].shape, node.output.shape, *plane)
        x, (o, per_group, kh, kw) = node.inputs[0], node.inputs[3].shape
        pixels = math.prod(node.output.shape[2:])
        size = 1 if node.output.dtype in QUANTIZED else 4
        # in 4-byte units: the window rows (bytes), the product rows, the channels-last
        # input, the product's two scratch buffers
        return ((x.shape[0], -(-pixels * per_group * kh * kw // 4)),
                (x.shape[0], -(-pixels * o * size // 4)),
                (x.shape[0], -(-math.prod(x.shape[1:]) // 4)),
                *scratch_shapes((x.shape[0], pixels), per_group * kh * kw))

    def _integer(self, node: Node) -> bool:
        """Whether ``node`` lowers to the integer kernels (the module docstring's forms)."""
        named = node.named_inputs()
        weight = named["weight"]
        return (weight.data is not None and node.attrs.get("groups", 1) == 1
                and math.prod(weight.shape[1:]) <= QLINEAR_MAX_K
                and symmetric(weight, named["weight_zero_point"], weight.shape[0], self.name)
                and node.output.dtype in (named["input"].dtype, FLOAT))

    def _depthwise(self, node: Node) -> abi.KernelSpec | None:
        """The depthwise kernel of a float-path ``node`` (None: not depthwise)."""
        activation = node.attrs.get("activation", "")
        return _depthwise.spec(node.inputs[0], node.inputs[3], node.attrs.get("groups", 1),
                               (activation,) if activation else ())

    def _fused(self, node: Node) -> abi.KernelSpec | None:
        """The quantized depthwise row of ``node`` (None: not a depthwise conv requantized
        into its input's dtype)."""
        x = node.inputs[0]
        if self._depthwise(node) is None or node.output.dtype != x.dtype:
            return None
        activation = node.attrs.get("activation", "")
        return abi.BY_OP.get(("depthwise", "depthwise_conv2d",
                              (activation,) if activation else (), x.dtype))

    def lower(self, node: Node, ctx: LowerContext) -> None:
        require_constant_weight(node.inputs[3], self.name)
        fused = self._fused(node)
        if self._integer(node):
            self._lower_integer(node, ctx)
        elif fused is not None:
            self._lower_fused(node, ctx, fused)
        else:
            self._lower_float(node, ctx)

    def _lower_fused(self, node: Node, ctx: LowerContext, kernel: abi.KernelSpec) -> None:
        named = node.named_inputs()
        weight, w_real, w_scale = self._real_weight(named)
        pushers = {name: partial(ctx.address, named[value]) for name, value in (
            ("x", "input"), ("x_scale", "input_scale"), ("x_zero", "input_zero_point"),
            ("y_scale", "output_scale"), ("y_zero", "output_zero_point"))}
        real_bias = self._real_bias(named.get("bias"), named["input_scale"], w_scale,
                                    weight.shape[0])
        pushers.update(bias=partial(ctx.constant, real_bias),
                       scratch=partial(ctx.scratch, node, 0),
                       y=partial(ctx.address, node.output))
        _depthwise.call(ctx, kernel, _depthwise.geometry(node, named["input"], weight), w_real,
                        pushers)

    def _real_weight(self, named: dict[str, Any]) -> tuple[Any, np.ndarray, np.ndarray]:
        """(the weight value, its float32 values, its per-channel scales)."""
        weight = named["weight"]
        o = weight.shape[0]
        w_scale = per_channel(named["weight_scale"], o, "float32", self.name)
        return weight, real(np.asarray(weight.data), w_scale, per_channel(
            named["weight_zero_point"], o, "int32", self.name)), w_scale

    def _lower_integer(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        x, weight = named["input"], named["weight"]
        o, c, kh, kw = weight.shape
        stride, dilation = pair(node.attrs.get("stride", 1)), pair(node.attrs.get("dilation", 1))
        pads = conv_padding(node.attrs.get("padding", 0), (kh, kw), stride, dilation)
        pixels = math.prod(node.output.shape[2:])
        batch = x.shape[:1]
        pointwise = (kh, kw, *stride) == (1, 1, 1, 1) and not any(sum(pads, ()))
        # NCHW -> channels-last: a 1x1 stride-1 conv's rows already, else im2col's source
        ctx.address(x)
        ctx.scratch(node, 0 if pointwise else 2)
        ctx.numel(batch)
        ctx.push(c)
        ctx.push(math.prod(x.shape[2:]))
        ctx.call("qu8_transpose")
        if not pointwise:
            ctx.scratch(node, 2)
            ctx.address(named["input_zero_point"])
            ctx.scratch(node, 0)
            ctx.numel(batch)
            for number in (*x.shape[1:], *node.output.shape[2:], kh, kw, *stride, pads[0][0],
                           pads[1][0], *dilation):
                ctx.push(number)
            ctx.call("qu8_im2col")
        rows = np.asarray(weight.data).transpose(0, 2, 3, 1).reshape(o, -1)  # (o, kh kw c)
        call_qlinear(ctx, named, partial(ctx.scratch, node, 0), partial(ctx.scratch, node, 1),
                     (partial(ctx.scratch, node, 3), partial(ctx.scratch, node, 4)),
                     (*batch, pixels), rows,
                     node.attrs.get("activation", ""), x.dtype, self.name)
        ctx.scratch(node, 1)
        ctx.address(node.output)
        ctx.numel(batch)
        ctx.push(pixels)
        ctx.push(o)
        ctx.call("qu8_transpose" if node.output.dtype in QUANTIZED else "f32_transpose")

    def _lower_float(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        x = named["input"]
        weight, w_real, w_scale = self._real_weight(named)
        o = weight.shape[0]
        dequantize(ctx, x, partial(ctx.address, named["input_scale"]),
                   partial(ctx.address, named["input_zero_point"]),
                   partial(ctx.scratch, node, 0), None)
        real_bias = self._real_bias(named.get("bias"), named["input_scale"], w_scale, o)
        requantize = "output_scale" in named
        target = partial(ctx.scratch, node, 1) if requantize else partial(ctx.address,
                                                                          node.output)
        depthwise = self._depthwise(node)
        if depthwise is not None:
            _depthwise.call(ctx, depthwise, _depthwise.geometry(node, x, weight), w_real,
                            {"x": partial(ctx.scratch, node, 0),
                             "bias": partial(ctx.constant, real_bias),
                             "scratch": partial(ctx.scratch, node, 2), "y": target})
        else:
            self._call_conv(node, ctx, (w_real, real_bias), target)
        if requantize:
            quantize(ctx, partial(ctx.scratch, node, 1),
                     partial(ctx.address, named["output_scale"]),
                     partial(ctx.address, named["output_zero_point"]), node.output,
                     node.output.shape, None)

    def _call_conv(self, node: Node, ctx: LowerContext, weights: tuple[np.ndarray, np.ndarray],
                   target: Callable[[], None]) -> None:
        """The general f32 conv kernel on the dequantized input (scratch 0) with the real
        ``weights`` (weight, bias), into ``target``."""
        x = node.inputs[0]
        w_real, real_bias = weights
        o, _, kh, kw = w_real.shape
        ctx.scratch(node, 0)
        ctx.constant(pack_conv_weight(w_real, node.attrs.get("groups", 1)))
        ctx.constant(real_bias)
        target()
        stride, dilation = pair(node.attrs.get("stride", 1)), pair(node.attrs.get("dilation", 1))
        (top, _), (left, _) = conv_padding(node.attrs.get("padding", 0), (kh, kw), stride,
                                           dilation)
        ctx.numel(x.shape[:1])
        for number in (*x.shape[1:], o, *node.output.shape[2:], kh, kw, *stride, top, left,
                       *dilation, node.attrs.get("groups", 1)):
            ctx.push(number)
        activation = node.attrs.get("activation", "")
        ctx.call(abi.find("conv", "conv2d", (activation,) if activation else ()).name)

    def _real_bias(self, bias: Any, input_scale: Any, w_scale: np.ndarray,
                   channels: int) -> np.ndarray:
        if bias is None:
            return np.zeros(channels, np.float32)
        if bias.data is None:
            raise CompileError("qconv2d: the bias must be a constant")
        if bias.dtype == "float32":
            return np.asarray(bias.data, np.float32)
        if input_scale.data is None:
            raise CompileError("qconv2d with an int32 bias lowers for a constant input scale")
        return (np.asarray(bias.data).astype(np.float32)
                * (np.float32(input_scale.data) * w_scale)).astype(np.float32)


OP = QConv2d()
