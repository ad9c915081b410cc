"""slice: ``input[..., start:end:step, ...]`` on axis ``dim`` (Python bounds); lowered to a
strided copy starting at ``start`` with the axis stride scaled by ``step``.

``end`` may be a symbolic dim name (with start 0 and step 1): the first ``seq`` rows of a
fixed table, as a position-embedding lookup needs. The dim's maximum must fit the axis."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._movement import axis_offset, copy_region
from ._shapes import axis, require_static
from ._strided import dense_strides, element_size

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Slice(OpDef):
    name = "slice"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = shapes[0]
        dim = axis(attrs["dim"], len(shape))
        start, end, step = attrs.get("start"), attrs.get("end"), attrs.get("step", 1)
        if isinstance(shape[dim], str) and isinstance(start, int) and isinstance(end, int) \
                and 0 <= start <= end and step == 1:
            # A fixed window of a symbolic axis; lowering checks the dim's minimum covers it.
            return [(shape[:dim] + (end - start,) + shape[dim + 1:], dtypes[0])]
        require_static(shape, (dim,), self.name)
        if isinstance(end, str):
            if attrs.get("start") not in (None, 0) or attrs.get("step", 1) != 1:
                raise CompileError(f"slice up to symbolic {end!r} needs start 0 and step 1")
            return [(shape[:dim] + (end,) + shape[dim + 1:], dtypes[0])]
        length = len(range(shape[dim])[attrs.get("start"):end:attrs.get("step", 1)])
        return [(shape[:dim] + (length,) + shape[dim + 1:], dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source = node.inputs[0]
        element_size(self.name, source, node.output)
        shape = source.shape
        dim = axis(node.attrs["dim"], len(shape))
        start, end = node.attrs.get("start"), node.attrs.get("end")
        if isinstance(shape[dim], str):
            low = ctx.graph.dims[shape[dim]][0]
            if low < end:
                raise CompileError(f"slice [{start}:{end}] of axis {shape[dim]!r}, which may "
                                   f"be as short as {low}")
            picked = range(start, end)
        else:
            if isinstance(end, str):
                if ctx.graph.dims[end][1] > shape[dim]:
                    raise CompileError(f"slice up to {end!r} (at most "
                                       f"{ctx.graph.dims[end][1]}) of an axis of {shape[dim]}")
                end = None
            picked = range(shape[dim])[start:end:node.attrs.get("step", 1)]
        strides = dense_strides(shape)
        strides[dim] = (picked.step,) + strides[dim]
        copy_region(ctx, node.output.shape, source, axis_offset(shape, dim, picked.start),
                    strides, node.output, (0,))


OP = Slice()
