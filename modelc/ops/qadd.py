"""qadd: TFLite's 8-bit Add of int8 tensors with their own (scale, zero point), in integers
only; lowered to ``qs8_qadd`` over same-shaped operands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi
from wasm_kernels.fixed_point import ADD_LEFT_SHIFT

from ..errors import CompileError
from . import OpDef
from ._qrescale import INT8, push_rescale, require_int8, require_scale
from ._shapes import broadcast

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


class QAdd(OpDef):
    name = "qadd"

    def infer(self, shapes: list[Shape], dtypes: list[str],
              attrs: dict[str, Any]) -> list[tuple[Shape, str]]:
        require_int8(self.name, dtypes)
        for key in ("input_scale", "other_scale", "scale"):
            require_scale(self.name, key, attrs[key])
        return [(broadcast(*shapes), INT8)]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        a, b = node.inputs
        if not tuple(a.shape) == tuple(b.shape) == tuple(node.output.shape):
            raise CompileError(f"qadd lowers same-shaped operands only, got {list(a.shape)} "
                               f"and {list(b.shape)}")
        attrs = node.attrs
        twice_max = 2 * max(attrs["input_scale"], attrs["other_scale"])
        ctx.address(a)
        ctx.address(b)
        ctx.address(node.output)
        ctx.numel(node.output.shape)
        for prefix in ("input", "other"):
            ctx.push(attrs[f"{prefix}_zero_point"])
            push_rescale(ctx, attrs[f"{prefix}_scale"] / twice_max)
        ctx.push(attrs["zero_point"])
        push_rescale(ctx, twice_max / ((1 << ADD_LEFT_SHIFT) * attrs["scale"]))
        ctx.push(attrs.get("low", -128))
        ctx.push(attrs.get("high", 127))
        ctx.call(abi.find("qrescale", "qadd", dtype=INT8).name)


OP = QAdd()
