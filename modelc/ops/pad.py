"""pad: pad (or crop, for negative amounts) the last ``len(pad) // 2`` axes, last first.

Constant padding is lowered to a fill of the output with ``value`` and one strided copy of
the (cropped) input into its region. The border modes copy the input into the middle of the
output, then fill each padded axis's two borders from the output itself, innermost axis
first, one strided copy per border: ``reflect`` reads the middle backwards (stride -1),
``replicate`` reads its edge (stride 0) and ``circular`` its other end.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._movement import copy_region, fill
from ._shapes import require_static
from ._strided import Factors, dense_strides, element_size

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Value

MODES = ("circular", "constant", "reflect", "replicate")


def _static(factors: Factors) -> int:
    """The product of ``factors`` that are all ints: the sizes and strides of padded axes,
    which ``infer`` requires to be static."""
    return math.prod(int(f) for f in factors)


def _largest_border(mode: str, size: int) -> int:
    """The widest border ``mode`` can fill from an axis of ``size`` (torch's limits)."""
    if mode == "reflect":
        return size - 1
    if mode == "circular":
        return size
    return 2 ** 31 - 1 if size else 0  # replicate: any width, from a non-empty axis


def _border_source(mode: str, side: str, before: int, size: int) -> tuple[int, int]:
    """(first output index read, step) for the border on ``side`` of a padded axis."""
    end = before + size  # one past the middle
    return {("reflect", "before"): (2 * before, -1), ("reflect", "after"): (end - 2, -1),
            ("replicate", "before"): (before, 0), ("replicate", "after"): (end - 1, 0),
            ("circular", "before"): (size, 1), ("circular", "after"): (before, 1)}[mode, side]


class Pad(OpDef):
    name = "pad"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape, amounts = list(shapes[0]), list(attrs["pad"])
        mode = attrs.get("mode", "constant")
        if mode not in MODES:
            raise CompileError(f"pad: unknown mode {mode!r}; available: {list(MODES)}")
        if len(amounts) % 2 or len(amounts) // 2 > len(shape):
            raise CompileError(f"pad: {amounts} must hold pairs for at most {len(shape)} axes")
        for i in range(len(amounts) // 2):
            dim = len(shape) - 1 - i
            require_static(tuple(shape), (dim,), self.name)
            before, after = amounts[2 * i], amounts[2 * i + 1]
            if mode != "constant":
                largest = _largest_border(mode, shape[dim])
                if min(before, after) < 0 or max(before, after) > largest:
                    raise CompileError(
                        f"pad: {mode} padding {amounts} of axis {dim} (size {shape[dim]}) "
                        f"must be between 0 and {largest} on each side")
            shape[dim] += before + after
        return [(tuple(shape), dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source, out = node.inputs[0], node.output
        element_size(self.name, source, out)
        amounts = list(node.attrs["pad"])
        region, source_at, target_at = list(source.shape), 0, 0
        source_strides, target_strides = dense_strides(source.shape), dense_strides(out.shape)
        for i in range(len(amounts) // 2):
            dim = len(region) - 1 - i
            before, after = amounts[2 * i], amounts[2 * i + 1]
            region[dim] += min(before, 0) + min(after, 0)
            # NOTE: padded axes are the last ones, so their strides are plain ints.
            source_at += max(-before, 0) * _static(source_strides[dim])
            target_at += max(before, 0) * _static(target_strides[dim])
        mode = node.attrs.get("mode", "constant")
        if mode == "constant":
            fill(ctx, out, node.attrs.get("value", 0.0))
        if all(isinstance(d, str) or d > 0 for d in region):
            copy_region(ctx, region, source, (source_at,), list(source_strides), out,
                        (target_at,))
        if mode != "constant":
            _fill_borders(ctx, mode, amounts, source, out)


def _fill_borders(ctx: LowerContext, mode: str, amounts: list[int], source: Value,
                  out: Value) -> None:
    """Fill the borders of every padded axis from the output, innermost axis first: axes
    already done span the whole output, axes still to do only their middle."""
    strides = dense_strides(out.shape)
    rank = len(out.shape)
    axes = range(rank - len(amounts) // 2, rank)
    for dim in reversed(axes):
        region = [out.shape[d] if d not in axes or d >= dim else source.shape[d]
                  for d in range(rank)]
        middle = sum(amounts[2 * (rank - 1 - d)] * _static(strides[d])
                     for d in axes if d < dim)
        stride = _static(strides[dim])
        before, after = amounts[2 * (rank - 1 - dim)], amounts[2 * (rank - 1 - dim) + 1]
        size = _static((source.shape[dim],))
        for side, width, start in (("before", before, 0), ("after", after, before + size)):
            if not width:
                continue
            first, step = _border_source(mode, side, before, size)
            read: list[Factors | None] = list(strides)
            read[dim] = None if step == 0 else (step * stride,)
            region[dim] = width
            copy_region(ctx, region, out, (middle + first * stride,), read, out,
                        (middle + start * stride,))


OP = Pad()
