"""split: chunks along ``dim`` of a given size (last may be smaller) or of listed sizes;
lowered to one strided copy per chunk, none for a chunk ``plan_memory`` left inside the
input (``output_views``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CompileError
from . import OpDef
from ._movement import axis_offset, copy_region
from ._shapes import axis, require_static
from ._strided import dense_strides, element_size

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Split(OpDef):
    name = "split"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = shapes[0]
        dim = axis(attrs.get("dim", 0), len(shape))
        require_static(shape, (dim,), self.name)
        size, length = attrs["split_size_or_sections"], shape[dim]
        sizes = ([min(size, length - s) for s in range(0, length, size)]
                 if isinstance(size, int) else list(size))
        if sum(sizes) != length:
            raise CompileError(f"split: sections {sizes} do not add up to {length}")
        return [(shape[:dim] + (s,) + shape[dim + 1:], dtypes[0]) for s in sizes]

    def output_views(self, node: Node) -> dict[int, int]:
        """Every chunk, when the input is static and has only 1s before ``dim``: a run of
        the input's bytes."""
        source = node.inputs[0]
        dim = axis(node.attrs.get("dim", 0), len(source.shape))
        shape = [d for d in source.shape if isinstance(d, int)]
        if len(shape) < len(source.shape) or math.prod(shape[:dim]) != 1:
            return {}
        run = math.prod(shape[dim + 1:]) * np.dtype(source.dtype).itemsize
        views, start = {}, 0
        for k, part in enumerate(node.outputs):
            views[k] = start * run
            start += int(part.shape[dim])
        return views

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source = node.inputs[0]
        element_size(self.name, source, *node.outputs)
        dim = axis(node.attrs.get("dim", 0), len(source.shape))
        views = self.output_views(node)
        start = 0
        for k, part in enumerate(node.outputs):
            if k not in views or not ctx.inside(part, source, views[k]):
                copy_region(ctx, part.shape, source, axis_offset(source.shape, dim, start),
                            dense_strides(source.shape), part, (0,))
            start += part.shape[dim]


OP = Split()
