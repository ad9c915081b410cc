"""Op families: the checks every member needs (dtypes, broadcasting, axes) live here, so an
op file holds only what is unique to it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi, abi_integer

from ..errors import CompileError
from . import OpDef
from ._shapes import axis, broadcast
from ._strided import emit_strided, operand_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape

Result = list[tuple["Shape", str]]
FLOAT = "float32"


class Unary(OpDef):
    """Elementwise one-input float ops: output has the input's shape and dtype; lowered to
    the ABI's unary kernel of the same name, when there is one."""

    @property
    def kernel(self) -> str:
        spec = abi.BY_OP.get(("unary", self.name, (), FLOAT))
        return spec.name if spec else ""

    def infer(self, shapes: list[Shape], dtypes: list[str], attrs: dict[str, Any]) -> Result:
        if dtypes[0] != FLOAT:
            raise CompileError(f"{self.name} expects float32, got {dtypes[0]}")
        return [(shapes[0], dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        if not self.kernel:
            super().lower(node, ctx)
        ctx.address(node.inputs[0])
        ctx.address(node.output)
        ctx.numel(node.inputs[0].shape)
        ctx.call(self.kernel)


class Binary(OpDef):
    """Elementwise two-operand ops with numpy broadcasting; a Python scalar operand is an
    attr. ``result_dtype`` None keeps the tensor operands' dtype. Lowered to the strided
    kernel ``kernel`` when it has one."""

    result_dtype: str | None = None
    kernel: str = ""
    operands: tuple[str, str] = ("input", "other")

    def lower(self, node: Node, ctx: LowerContext) -> None:
        if not self.kernel:
            super().lower(node, ctx)
        dtypes = sorted({v.dtype for v in node.inputs} | {node.output.dtype})
        integer = abi.BY_OP.get(("integer", self.name, (), dtypes[0]))
        if dtypes != [FLOAT] and (len(dtypes) != 1 or integer is None):
            offered = sorted({FLOAT} | {k.dtypes[0] for k in abi.KERNELS
                                        if (k.family, k.op) == ("integer", self.name)})
            raise CompileError(f"{self.name}: tensors of one dtype among {offered} lower to "
                               f"wasm, got {[v.dtype for v in node.inputs]}")
        strides = self.push_operands(node, ctx)
        ctx.address(node.output)
        emit_strided(ctx, self.kernel if integer is None else integer.name, node.output.shape,
                     strides)

    def push_operands(self, node: Node, ctx: LowerContext) -> list:
        """Push each operand's address (a scalar attr becomes one element placed in the
        tensor operands' dtype) and return its strides against the output's rank, for
        ``emit_strided``."""
        rank = len(node.output.shape)
        named = node.named_inputs()
        dtype = next((named[o].dtype for o in self.operands if o in named), FLOAT)
        strides = []
        for operand in self.operands:
            if operand in named:
                ctx.address(named[operand])
                strides.append(operand_strides(named[operand].shape, rank))
            else:
                ctx.scalar(node.attrs[operand], dtype)
                strides.append([None] * rank)
        return strides

    def infer(self, shapes: list[Shape], dtypes: list[str], attrs: dict[str, Any]) -> Result:
        if len(set(dtypes)) > 1 and self.result_dtype is None:
            raise CompileError(f"{self.name}: operand dtypes differ: {dtypes}")
        return [(broadcast(*shapes), self.result_dtype or dtypes[0])]


COMPARED = abi_integer.COMPARE_TYPES
"""The operand dtypes comparisons lower for."""


class Compare(Binary):
    """Elementwise comparisons: bool results (one byte each, as numpy stores them), lowered
    for operands of one dtype in ``COMPARED`` to the strided compare kernel."""

    result_dtype = "bool"

    def lower(self, node: Node, ctx: LowerContext) -> None:
        operands = sorted({v.dtype for v in node.inputs})
        if len(operands) != 1 or operands[0] not in COMPARED:
            raise CompileError(f"{self.name}: operands of one dtype among {sorted(COMPARED)} "
                               f"lower to wasm, got {[v.dtype for v in node.inputs]}")
        strides = self.push_operands(node, ctx)
        ctx.address(node.output)
        emit_strided(ctx, abi.find("compare", self.name, dtype=operands[0]).name,
                     node.output.shape, strides)


class Reduce(OpDef):
    """Reductions over ``dim`` (None: all axes) with ``keepdim``; lowered to
    ``f32_reduce_<kernel_op>`` over (outer, n, inner) when the axes are adjacent."""

    kernel_op: str = ""

    def _axes(self, shape: Shape, dims: Any) -> list[int]:
        if dims is None:
            return list(range(len(shape)))
        return sorted({axis(d, len(shape)) for d in ((dims,) if isinstance(dims, int)
                                                      else dims)})

    def lower(self, node: Node, ctx: LowerContext) -> None:
        shape = node.inputs[0].shape
        axes = self._axes(shape, node.attrs.get("dim"))
        # NOTE: an axis of size 1 moves no element, reduced or not: only the others must be
        # adjacent (a batch of 1 reduced with the spatial axes around the channels).
        axes = [a for a in axes if shape[a] != 1] or axes[:1]
        if any(shape[a] != 1 and a not in axes for a in range(axes[0], axes[-1] + 1)):
            raise CompileError(f"{self.name} over non-adjacent axes {axes} is not lowered")
        if node.inputs[0].dtype != FLOAT:  # NOTE: the kernels would read integers as floats
            raise CompileError(f"{self.name} lowers float32 only, got {node.inputs[0].dtype}")
        ctx.address(node.inputs[0])
        ctx.address(node.output)
        ctx.numel(shape[:axes[0]])
        ctx.numel(shape[axes[0]:axes[-1] + 1])
        ctx.numel(shape[axes[-1] + 1:])
        ctx.call(abi.find("reduce", self.kernel_op).name)

    def infer(self, shapes: list[Shape], dtypes: list[str], attrs: dict[str, Any]) -> Result:
        shape = shapes[0]
        axes = set(self._axes(shape, attrs.get("dim")))
        keep = attrs.get("keepdim", False)
        out = tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)
        return [(out, dtypes[0])]


class SameShape(OpDef):
    """Ops whose output has the input's shape and dtype (normalisations, softmax); float."""

    def infer(self, shapes: list[Shape], dtypes: list[str], attrs: dict[str, Any]) -> Result:
        if dtypes[0] != FLOAT:
            raise CompileError(f"{self.name} expects float32, got {dtypes[0]}")
        if "dim" in attrs and attrs["dim"] is not None:
            axis(attrs["dim"], len(shapes[0]))
        return [(shapes[0], dtypes[0])]
