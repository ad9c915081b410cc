"""Lowering to the 4-D strided elementwise kernels (``f32_add``, ``f32_mul``, ...).

Those kernels write a dense (d0, d1, d2, d3) output and read each operand through its own
per-axis strides (0 broadcasts). Any broadcast of up to 4 axes, and any permutation of up
to 4 axes (a copy through ``mul`` by 1.0, which is exact), maps onto them; adjacent axes
that every operand reads the same way are merged first, so higher ranks often fit too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from wasm_kernels import abi
from wasm_kernels.kernel_spec import ELEMENTS

from ..errors import CompileError
from ..graph import Dim, Value

if TYPE_CHECKING:
    from ..codegen import LowerContext

RANK = 4
Factors = tuple[Dim, ...]  # a product of ints and symbolic dims


def dense_strides(shape: Sequence[Dim]) -> list[Factors]:
    """Row-major strides in elements, each as a product of later dims."""
    return [tuple(shape[i + 1:]) for i in range(len(shape))]


def operand_strides(shape: Sequence[Dim], out_rank: int) -> list[Factors | None]:
    """Strides of an operand broadcast to rank ``out_rank``; None where it broadcasts."""
    strides = dense_strides(shape)
    padded: list[Factors | None] = [None] * (out_rank - len(shape))
    return padded + [None if d == 1 else s for d, s in zip(shape, strides)]


def _canonical(factors: Factors) -> tuple[int, tuple[str, ...]]:
    ints = 1
    for f in factors:
        if isinstance(f, int):
            ints *= f
    return ints, tuple(sorted(f for f in factors if isinstance(f, str)))


def _merge(out: list[Factors], operands: list[list[Factors | None]]
           ) -> tuple[list[Factors], list[list[Factors | None]]]:
    """Merge axis i into i+1 where every operand reads axis i at (stride of i+1) * dim(i+1)."""
    axes = list(range(len(out)))
    i = 0
    while i + 1 < len(axes) and len(axes) > 1:
        a, b = axes[i], axes[i + 1]
        mergeable = all((op[a] is None and op[b] is None)
                        or (op[a] is not None and op[b] is not None
                            and _canonical(op[a]) == _canonical(op[b] + out[b]))
                        for op in operands)
        if mergeable:
            out[b] = out[a] + out[b]
            axes.pop(i)
        else:
            i += 1
    return [out[a] for a in axes], [[op[a] for a in axes] for op in operands]


def emit_strided(ctx: LowerContext, kernel: str, out_shape: Sequence[Dim],
                 operands: list[list[Factors | None]]) -> None:
    """Push the dims and operand strides (addresses already pushed) and call ``kernel``.

    Raises:
        CompileError: more than 4 axes remain after merging.
    """
    # NOTE: an output axis of size 1 is only ever read at index 0, so it is dropped before
    # merging: otherwise it separates axes that merge (a 5-D permute with a unit axis).
    keep = [i for i, d in enumerate(out_shape) if d != 1]
    out, ops = _merge([(out_shape[i],) for i in keep], [[op[i] for i in keep] for op in operands])
    if not out:  # one element
        out, ops = [(1,)], [[None] for _ in operands]
    if len(out) > RANK:
        raise CompileError(f"{kernel}: {len(out)} independent axes after merging; the "
                           f"strided kernels take at most {RANK}")
    pad = RANK - len(out)
    for dim in [(1,)] * pad + out:
        ctx.numel(dim)
    for op in ops:
        for stride in [None] * pad + op:
            ctx.push(0) if stride is None else ctx.numel(stride)
    ctx.call(kernel)


def element_size(op: str, *values: Value) -> int:
    """The bytes per element of ``values``, which must share an element dtype of the ABI.

    Raises:
        CompileError: naming the dtypes met.
    """
    dtypes = [v.dtype for v in values]
    if len(set(dtypes)) != 1 or dtypes[0] not in ELEMENTS:
        raise CompileError(f"{op}: only tensors of one dtype among {sorted(ELEMENTS)} lower to "
                           f"wasm, got {dtypes}")
    return ELEMENTS[dtypes[0]][1]


def emit_copy(ctx: LowerContext, index_shape: Sequence[Dim],
              operands: list[list[Factors | None]], size: int) -> None:
    """A copy kernel over ``index_shape`` (addresses pushed) of elements of ``size`` bytes:
    ``u8_copy``, ``u16_copy`` or ``f32_copy``; 8-byte elements as two 4-byte words (a
    trailing axis of 2, the others' strides scaled by it). The kernels move elements bit
    for bit, so any dtype of that size travels through them unchanged."""
    words = size // 4
    if words > 1:
        index_shape = (*index_shape, words)
        operands = [[None if s is None else (*s, words) for s in op] + [(1,)]
                    for op in operands]
    kernel = abi.find("movement", "copy", dtype=abi.MOVED[min(size, 4)]).name
    emit_strided(ctx, kernel, index_shape, operands)


def address_at(ctx: LowerContext, value: Value, offset: Factors) -> None:
    """Push the address of element ``product(offset)`` of ``value``."""
    ctx.address(value)
    if all(f != 0 for f in offset):
        ctx.advance(offset, np.dtype(value.dtype).itemsize)


def copy(ctx: LowerContext, source: Value, target: Value,
         source_strides: list[Factors | None], source_offset: Factors = (0,)) -> None:
    """Write ``target`` (dense) by reading ``source`` from element ``product(source_offset)``
    through ``source_strides`` (one per target axis): floats as ``target = source * 1.0``
    (the fast strided kernel, exact for every float including -0 and NaN; it transposes
    and takes every other float one register at a time), other dtypes through the copy
    kernel of their size."""
    size = element_size("copy", source, target)
    address_at(ctx, source, source_offset)
    if target.dtype != "float32":
        ctx.address(target)
        target_strides: list[Factors | None] = list(dense_strides(target.shape))
        emit_copy(ctx, target.shape, [source_strides, target_strides], size)
        return
    ctx.scalar(1.0)
    ctx.address(target)
    emit_strided(ctx, "f32_mul", target.shape,
                 [source_strides, [None] * len(target.shape)])
