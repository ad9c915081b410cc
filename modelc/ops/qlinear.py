"""qlinear: quantized ``linear`` (semantics in ``nn/functional/quantized.py``), lowered to one
integer kernel ``q{u,s}8_qlinear_{dequantize,requantize}[_relu|_relu6]``: int8 x int8 ->
int32 accumulation, bias in the accumulator, the weight packed at compile time by
``wasm_kernels.pack_quantized``. The weight must be constant with zero point 0 (symmetric,
as onnxruntime and ``modelc.quantize`` make them); a requantized output has the input's
dtype. Other forms run in the interpreter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from wasm_kernels import abi
from wasm_kernels.pack_quantized import pack_qlinear_weight

from ..errors import CompileError
from . import OpDef
from ._qproduct import check_operands, optional, result_dtype
from ._quantized import per_channel
from ._shapes import require_constant_weight

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class QLinear(OpDef):
    name = "qlinear"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        x, weight = shapes[0], shapes[3]
        if len(x) < 1 or len(weight) != 2 or x[-1] != weight[1]:
            raise CompileError(f"qlinear expects input (..., in) and weight (out, in), got "
                               f"{list(x)} and {list(weight)}")
        check_operands(self.name, shapes, dtypes, weight[0], ("input", "weight"))
        bias, output = optional(shapes, dtypes, has_bias=True)
        dtype = result_dtype(self.name, bias, output, weight[0], attrs)
        return [(tuple(x[:-1]) + (weight[0],), dtype)]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = dict(zip(node.input_names, node.inputs))
        x, weight = named["input"], named["weight"]
        require_constant_weight(weight, self.name)
        n, k = weight.shape
        if weight.dtype != "int8" or np.any(per_channel(named["weight_zero_point"], n,
                                                        "int32", self.name)):
            raise CompileError("qlinear lowers for int8 weights with zero point 0 (symmetric); "
                               f"got {weight.dtype} with zero point "
                               f"{np.asarray(named['weight_zero_point'].data).tolist()}")
        requantize = "output_scale" in named
        if requantize and node.output.dtype != x.dtype:
            raise CompileError(f"qlinear: a requantized output lowers in the input's dtype "
                               f"({x.dtype}), got {node.output.dtype}")
        bias = named.get("bias")
        ctx.address(x)
        ctx.address(named["input_scale"])
        ctx.address(named["input_zero_point"])
        ctx.constant(pack_qlinear_weight(np.asarray(weight.data)))
        ctx.constant(per_channel(named["weight_scale"], n, "float32", self.name))
        if bias is not None and bias.dtype == "int32":
            ctx.address(bias)
        else:
            ctx.constant(np.zeros(n, np.int32))
        if requantize:
            ctx.address(named["output_scale"])
            ctx.address(named["output_zero_point"])
        elif bias is not None and bias.dtype == "float32":
            ctx.address(bias)
        else:
            ctx.constant(np.zeros(n, np.float32))
        ctx.address(node.output)
        ctx.numel(x.shape[:-1])
        ctx.push(k)
        ctx.push(n)
        activation = node.attrs.get("activation", "")
        epilogue = ("requantize" if requantize else "dequantize",) + ((activation,) if
                                                                      activation else ())
        ctx.call(abi.find("qlinear", "qlinear", epilogue, x.dtype).name)


OP = QLinear()
