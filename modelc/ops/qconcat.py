"""qconcat: int8 tensors joined along ``dim`` into the output's (scale, zero point), as
TFLite's Concatenation: an input already in those is copied (``qs8_copy_rows``), any other
requantized in fixed point (``qs8_rescale_rows``) into its region of the output."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi

from ..errors import CompileError
from ._qrescale import INT8, push_rescale, require_int8, require_scale
from ._shapes import axis
from .concat import Concat

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


class QConcat(Concat):
    name = "qconcat"

    def infer(self, shapes: list, dtypes: list[str],
              attrs: dict[str, Any]) -> list[tuple[Shape, str]]:
        require_int8(self.name, dtypes)
        if not len(shapes) == len(attrs["scales"]) == len(attrs["zero_points"]):
            raise CompileError(f"qconcat: {len(shapes)} inputs need as many scales and zero "
                               f"points, got {len(attrs['scales'])} and "
                               f"{len(attrs['zero_points'])}")
        for scale in (*attrs["scales"], attrs["scale"]):
            require_scale(self.name, "every scale", scale)
        return super().infer(shapes, dtypes, attrs)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        out, attrs = node.output, node.attrs
        dim = axis(attrs.get("dim", 0), len(out.shape))
        start = 0
        for part, scale, zero_point in zip(node.inputs, attrs["scales"], attrs["zero_points"]):
            ctx.address(part)
            ctx.address(out)
            if start:
                ctx.advance((start,) + tuple(out.shape[dim + 1:]), 1)
            ctx.numel(out.shape[:dim])
            ctx.numel(part.shape[dim:])
            ctx.numel(out.shape[dim:])
            if (scale, zero_point) == (attrs["scale"], attrs["zero_point"]):
                ctx.call(abi.find("qrescale", "copy_rows", dtype=INT8).name)
            else:
                ctx.push(zero_point)
                push_rescale(ctx, scale / attrs["scale"])
                ctx.push(attrs["zero_point"])
                ctx.push(-128)
                ctx.push(127)
                ctx.call(abi.find("qrescale", "rescale_rows", dtype=INT8).name)
            start += part.shape[dim]


OP = QConcat()
