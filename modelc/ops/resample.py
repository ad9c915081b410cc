"""resample: one axis of a resize, each output row a weighted sum of source rows given by
constant (out, taps) index and weight tables (``nn.functional.resize``).

Lowered to one ``f32_resample`` over (outer, size, inner): only the resampled axis must
have a fixed size, so a symbolic batch or sequence axis elsewhere is fine. The tables are
placed tap-major, so the kernel reads a register of weights for consecutive outputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CompileError
from . import OpDef
from ._movement import require_float
from ._shapes import axis, require_static

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Resample(OpDef):
    name = "resample"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape, index, weight = shapes
        dim = axis(attrs["dim"], len(shape))
        if len(index) != 2 or tuple(index) != tuple(weight):
            raise CompileError(f"resample: index {list(index)} and weight {list(weight)} must "
                               "both be (out, taps)")
        if dtypes[0] != "float32" or not dtypes[1].startswith("int"):
            raise CompileError(f"resample expects a float32 input and integer indices, got "
                               f"{dtypes[0]} and {dtypes[1]}")
        require_static(tuple(shape), (dim,), self.name)
        return [(tuple(shape[:dim]) + (index[0],) + tuple(shape[dim + 1:]), dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source, index, weight = node.inputs
        require_float(self.name, source, node.output)
        if not (index.is_constant and weight.is_constant):
            raise CompileError("resample lowers constant index and weight tables only")
        shape = source.shape
        dim = axis(node.attrs["dim"], len(shape))
        rows, taps = index.shape
        ctx.address(source)
        ctx.constant(np.ascontiguousarray(np.asarray(index.data, np.int32).T))  # (taps, on)
        ctx.constant(np.ascontiguousarray(np.asarray(weight.data, np.float32).T))
        ctx.address(node.output)
        ctx.numel(shape[:dim])
        ctx.push(int(shape[dim]))  # NOTE: infer required it static
        ctx.push(int(rows))
        ctx.numel(shape[dim + 1:])
        ctx.push(int(taps))
        ctx.call("f32_resample")


OP = Resample()
