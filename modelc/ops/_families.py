"""Op families: the checks every member needs (dtypes, broadcasting, axes) live here, so an
op file holds only what is unique to it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._shapes import axis, broadcast

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape

Result = list[tuple["Shape", str]]
FLOAT = "float32"


class Unary(OpDef):
    """Elementwise one-input float ops: output has the input's shape and dtype."""

    kernel: str = ""

    def infer(self, shapes: list["Shape"], dtypes: list[str], attrs: dict[str, Any]) -> Result:
        if dtypes[0] != FLOAT:
            raise CompileError(f"{self.name} expects float32, got {dtypes[0]}")
        return [(shapes[0], dtypes[0])]

    def lower(self, node: "Node", ctx: "LowerContext") -> None:
        if not self.kernel:
            super().lower(node, ctx)
        ctx.address(node.inputs[0])
        ctx.address(node.output)
        ctx.numel(node.inputs[0].shape)
        ctx.call(self.kernel)


class Binary(OpDef):
    """Elementwise two-operand ops with numpy broadcasting; a Python scalar operand is an
    attr. ``result_dtype`` None keeps the tensor operands' dtype."""

    result_dtype: str | None = None

    def infer(self, shapes: list["Shape"], dtypes: list[str], attrs: dict[str, Any]) -> Result:
        if len(set(dtypes)) > 1 and self.result_dtype is None:
            raise CompileError(f"{self.name}: operand dtypes differ: {dtypes}")
        return [(broadcast(*shapes), self.result_dtype or dtypes[0])]


class Compare(Binary):
    result_dtype = "bool"


class Reduce(OpDef):
    """Reductions over ``dim`` (None: all axes) with ``keepdim``."""

    def infer(self, shapes: list["Shape"], dtypes: list[str], attrs: dict[str, Any]) -> Result:
        shape = shapes[0]
        dims = attrs.get("dim")
        if dims is None:
            axes = set(range(len(shape)))
        else:
            axes = {axis(d, len(shape)) for d in ((dims,) if isinstance(dims, int) else dims)}
        keep = attrs.get("keepdim", False)
        out = tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)
        return [(out, dtypes[0])]


class SameShape(OpDef):
    """Ops whose output has the input's shape and dtype (normalisations, softmax); float."""

    def infer(self, shapes: list["Shape"], dtypes: list[str], attrs: dict[str, Any]) -> Result:
        if dtypes[0] != FLOAT:
            raise CompileError(f"{self.name} expects float32, got {dtypes[0]}")
        if "dim" in attrs and attrs["dim"] is not None:
            axis(attrs["dim"], len(shapes[0]))
        return [(shapes[0], dtypes[0])]
