"""qconv2d: quantized ``conv2d`` (semantics in ``nn/functional/quantized.py``).

Lowered through float32 for now: the input is dequantized into scratch, the f32 conv kernel
runs on the dequantized constant weight (an int32 bias becomes ``bias * input_scale *
weight_scale``, so the input scale must be constant), with relu / relu6 fused, and a
requantized output is quantized from a second scratch. The result may differ from the
integer reference by one quantization step where float rounding moves a value across a
rounding boundary.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from nn.functional.conv import conv_padding
from wasm_kernels import abi
from wasm_kernels.pack import pack_conv_weight

from ..errors import CompileError
from . import OpDef
from ._qproduct import check_operands, optional, result_dtype
from ._quantized import dequantize, per_channel, quantize, real
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
        return (node.inputs[0].shape, node.output.shape)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = dict(zip(node.input_names, node.inputs))
        x, weight = named["input"], named["weight"]
        require_constant_weight(weight, self.name)
        o, per_group, kh, kw = weight.shape
        w_scale = per_channel(named["weight_scale"], o, "float32", self.name)
        w_real = real(np.asarray(weight.data), w_scale,
                      per_channel(named["weight_zero_point"], o, "int32", self.name))
        dequantize(ctx, x, partial(ctx.address, named["input_scale"]),
                   partial(ctx.address, named["input_zero_point"]),
                   partial(ctx.scratch, node, 0), None)
        bias = named.get("bias")
        ctx.scratch(node, 0)
        ctx.constant(pack_conv_weight(w_real, node.attrs.get("groups", 1)))
        ctx.constant(self._real_bias(bias, named["input_scale"], w_scale, o))
        requantize = "output_scale" in named
        if requantize:
            ctx.scratch(node, 1)
        else:
            ctx.address(node.output)
        stride, dilation = pair(node.attrs.get("stride", 1)), pair(node.attrs.get("dilation", 1))
        (top, _), (left, _) = conv_padding(node.attrs.get("padding", 0), (kh, kw), stride,
                                           dilation)
        ctx.numel(x.shape[:1])
        for number in (*x.shape[1:], o, *node.output.shape[2:], kh, kw, *stride, top, left,
                       *dilation, node.attrs.get("groups", 1)):
            ctx.push(number)
        activation = node.attrs.get("activation", "")
        ctx.call(abi.find("conv", "conv2d", (activation,) if activation else ()).name)
        if requantize:
            quantize(ctx, partial(ctx.scratch, node, 1),
                     partial(ctx.address, named["output_scale"]),
                     partial(ctx.address, named["output_zero_point"]), node.output,
                     node.output.shape, None)

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
