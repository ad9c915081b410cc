"""concat: tensors joined along an existing axis ``dim``; lowered to one strided copy per
input into its region of the output. Along an axis with only 1s before it each input's region
is one contiguous run of bytes, where ``plan_memory`` may place the input itself: its
producer then writes it in place and no copy is made."""

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


class Concat(OpDef):
    name = "concat"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        first = shapes[0]
        dim = axis(attrs.get("dim", 0), len(first))
        for shape in shapes:
            require_static(shape, (dim,), self.name)
            if len(shape) != len(first) or any(a != b for i, (a, b) in
                                               enumerate(zip(shape, first)) if i != dim):
                raise CompileError(f"concat: shapes {[list(s) for s in shapes]} differ "
                                   f"outside dim {dim}")
        total = sum(s[dim] for s in shapes)
        return [(first[:dim] + (total,) + first[dim + 1:], dtypes[0])]

    def input_slices(self, node: Node) -> dict[int, int]:
        """Every input, when the output is static and has only 1s before ``dim``."""
        out = node.output
        dim = axis(node.attrs.get("dim", 0), len(out.shape))
        shape = [d for d in out.shape if isinstance(d, int)]
        if len(shape) < len(out.shape) or math.prod(shape[:dim]) != 1:
            return {}
        run = math.prod(shape[dim + 1:]) * np.dtype(out.dtype).itemsize
        slices, start = {}, 0
        for k, part in enumerate(node.inputs):
            slices[k] = start * run
            start += int(part.shape[dim])
        return slices

    def lower(self, node: Node, ctx: LowerContext) -> None:
        out = node.output
        element_size(self.name, out, *node.inputs)
        dim = axis(node.attrs.get("dim", 0), len(out.shape))
        slices = self.input_slices(node)
        start = 0
        for k, part in enumerate(node.inputs):
            if k not in slices or not ctx.inside(part, out, slices[k]):
                copy_region(ctx, part.shape, part, (0,), dense_strides(part.shape), out,
                            axis_offset(out.shape, dim, start))
            start += part.shape[dim]


OP = Concat()
