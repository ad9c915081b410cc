"""Lowering helpers for the data-movement ops (slice, split, concat, pad): strided copies
through the copy kernels, whose source and target both take per-axis strides, so a region of
either side is a base offset plus the dense strides of the whole tensor. Elements of every
element dtype of the ABI move, bit for bit, except a whole float32 target (a slice, a split):
that is ``_strided.copy``, a multiply by 1.0, the same value (a NaN stays a NaN)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import CompileError
from ..graph import Dim, Value
from ._strided import Factors, address_at, copy, dense_strides, element_size, emit_copy

if TYPE_CHECKING:
    from ..codegen import LowerContext


def require_float(op: str, *values: Value) -> None:
    """Raises CompileError unless every value is float32."""
    dtypes = [v.dtype for v in values]
    if any(d != "float32" for d in dtypes):
        raise CompileError(f"{op}: only float32 lowers to wasm, got {dtypes}")


def axis_offset(shape: Sequence[Dim], axis: int, start: int) -> Factors:
    """The element offset of index ``start`` along ``axis`` of a dense ``shape``."""
    return (start,) + tuple(shape[axis + 1:])


def copy_region(ctx: LowerContext, index_shape: Sequence[Dim],
                source: Value, source_offset: Factors, source_strides: list[Factors | None],
                target: Value, target_offset: Factors) -> None:
    """``target[region] = source[region']`` over ``index_shape``: the target region starts
    ``target_offset`` elements in and has the target's dense strides. A region that is the
    whole target (a slice, a split) is a ``copy``."""
    if tuple(index_shape) == tuple(target.shape) and not all(f != 0 for f in target_offset):
        copy(ctx, source, target, source_strides, source_offset)
        return
    size = element_size("copy", source, target)
    address_at(ctx, source, source_offset)
    address_at(ctx, target, target_offset)
    emit_copy(ctx, index_shape, [list(source_strides), list(dense_strides(target.shape))],
              size)


def fill(ctx: LowerContext, target: Value, number: float) -> None:
    """Every element of ``target`` = ``number`` (a copy from one element of its dtype,
    strides 0)."""
    ctx.scalar(number, target.dtype)
    ctx.address(target)
    emit_copy(ctx, target.shape, [[None] * len(target.shape), list(dense_strides(target.shape))],
              element_size("fill", target))
