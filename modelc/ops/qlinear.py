"""qlinear: quantized ``linear`` (semantics in ``nn/functional/quantized.py``), lowered to one
integer kernel ``q{u,s}8_qlinear_{dequantize,requantize}[_relu|_relu6]``: int8 x int8 ->
int32 accumulation, bias in the accumulator, the weight packed at compile time by
``wasm_kernels.pack_quantized``. The weight must be constant with zero point 0 (symmetric,
as onnxruntime and ``modelc.quantize`` make them); a requantized output has the input's
dtype. Other forms run in the interpreter."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CompileError
from . import OpDef
from ._qgemm import call_qlinear, scratch_shapes, symmetric
from ._qproduct import check_operands, optional, result_dtype
from ._shapes import require_constant_weight

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


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

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        x, weight = node.inputs[0], node.inputs[3]
        return scratch_shapes(x.shape[:-1], weight.shape[1])

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        x, weight = named["input"], named["weight"]
        require_constant_weight(weight, self.name)
        if not symmetric(weight, named["weight_zero_point"], weight.shape[0], self.name):
            raise CompileError("qlinear lowers for int8 weights with zero point 0 (symmetric); "
                               f"got {weight.dtype} with zero point "
                               f"{np.asarray(named['weight_zero_point'].data).tolist()}")
        if "output_scale" in named and node.output.dtype != x.dtype:
            raise CompileError(f"qlinear: a requantized output lowers in the input's dtype "
                               f"({x.dtype}), got {node.output.dtype}")
        call_qlinear(ctx, named, partial(ctx.address, x), partial(ctx.address, node.output),
                     (partial(ctx.scratch, node, 0), partial(ctx.scratch, node, 1)),
                     x.shape[:-1], np.asarray(weight.data), node.attrs.get("activation", ""),
                     x.dtype, self.name)


OP = QLinear()
