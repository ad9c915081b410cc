"""qmatmul: quantized ``matmul`` of two activations (semantics in
``nn/functional/quantized.py``).

Lowered through float32 for now: both operands are dequantized into scratch, multiplied by
``f32_bmm`` (batch dims equal, or the right operand shared), and a requantized output is
quantized from a third scratch; it may differ from the integer reference by one
quantization step where float rounding moves a value across a rounding boundary.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._qproduct import check_operands, optional, result_dtype
from ._quantized import dequantize, quantize
from .matmul import OP as MATMUL

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


class QMatmul(OpDef):
    name = "qmatmul"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        check_operands(self.name, shapes, dtypes, None, ("input", "other"))
        try:
            shape = MATMUL.infer([shapes[0], shapes[3]], ["float32", "float32"], {})[0][0]
        except CompileError as err:
            raise CompileError(f"qmatmul: {err}") from None
        _, output = optional(shapes, dtypes, has_bias=False)
        return [(shape, result_dtype(self.name, None, output, None, attrs))]

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        return (node.inputs[0].shape, node.inputs[3].shape, node.output.shape)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        a, b = named["input"], named["other"]
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise CompileError("qmatmul lowers for operands of rank >= 2")
        batch = node.output.shape[:-2]
        shared = all(d == 1 for d in b.shape[:-2])
        if tuple(a.shape[:-2]) != tuple(batch) or not shared and tuple(b.shape[:-2]) != \
                tuple(batch):
            raise CompileError(f"qmatmul broadcasting {list(a.shape)} @ {list(b.shape)} is not "
                               "lowered")
        for index, (value, name) in enumerate(((a, "input"), (b, "other"))):
            dequantize(ctx, value, partial(ctx.address, named[f"{name}_scale"]),
                       partial(ctx.address, named[f"{name}_zero_point"]),
                       partial(ctx.scratch, node, index), None)
        requantize = "output_scale" in named
        ctx.scratch(node, 0)
        ctx.scratch(node, 1)
        if requantize:
            ctx.scratch(node, 2)
        else:
            ctx.address(node.output)
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        ctx.numel(batch)
        for dims in ((m,), (k,), (n,)):
            ctx.numel(dims)
        ctx.numel((m, k))
        if shared:
            ctx.push(0)
        else:
            ctx.numel((k, n))
        ctx.call("f32_bmm")
        if requantize:
            quantize(ctx, partial(ctx.scratch, node, 2),
                     partial(ctx.address, named["output_scale"]),
                     partial(ctx.address, named["output_zero_point"]), node.output,
                     node.output.shape, None)


OP = QMatmul()
