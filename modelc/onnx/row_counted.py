"""Tensors whose row count is known only at run time (NonMaxSuppression's selection), and the
ops that keep rows as rows, so that what they compute from such a tensor is one too.

A ``RowCounted`` is a fixed-capacity tensor whose first ``count`` rows (along axis 0) hold
values. An op whose output row i depends only on row i of its row-counted inputs (and on
whole other operands) carries the count over: elementwise ops whose row-counted operands
have the output's rank (the others broadcast into it without rows), a Gather of columns or at
row-counted indices along axis 0, Squeeze / Unsqueeze / Slice / Transpose / Concat leaving
axis 0 alone. Any other op reading one is refused; a graph output that is one is returned
with its count (``importer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import CompileError
from .node import OnnxNode

COUNT_SUFFIX = ".count"
"""The name of the graph output holding a ``RowCounted`` output's row count, after its
own name."""

_ROWWISE = {"Identity", "Cast", "CastLike", "Neg", "Abs", "Relu", "Sigmoid", "Tanh", "Exp",
            "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Not", "Clip",
            "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Equal", "Less",
            "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Where"}
"""Elementwise ops (with broadcasting): row i of the output reads row i of each operand of
the output's rank."""


@dataclass(frozen=True)
class RowCounted:
    """A tensor of which only the first ``count`` rows (an int64 ``(1,)`` tensor) hold
    values, and the node whose selection it comes from."""

    rows: Any
    count: Any
    producer: str


def _axes(n: OnnxNode, rank: int) -> list[int] | None:
    axes = n.ints("axes", 1 if n.op_type in ("Squeeze", "Unsqueeze") else 3)
    return None if axes is None else [a % rank for a in axes]


def keeps_rows(n: OnnxNode, counted: Sequence[bool], results: Sequence[Any]) -> bool:
    """Whether every output row of ``n`` (imported on the rows of its operands, ``counted``
    marking the row-counted ones) is computed from the same rows of those operands."""
    ranks = [len(v.shape) if v is not None else 0 for v in n.inputs]
    outputs = [len(r.shape) for r in results]
    op = n.op_type
    if op in _ROWWISE:
        return all(rank == outputs[0] for rank, c in zip(ranks, counted) if c) and all(
            rank < outputs[0] or n.input(k).shape[0] == 1
            for k, (rank, c) in enumerate(zip(ranks, counted)) if not c and rank)
    if op == "Gather":
        axis = n.attr("axis", 0) % ranks[0]
        return (axis != 0) if counted[0] and not counted[1] else (
            axis == 0 and not counted[0])
    if op == "Squeeze":
        axes = _axes(n, ranks[0])
        return axes is not None and 0 not in axes
    if op == "Unsqueeze":
        axes = _axes(n, outputs[0])
        return axes is not None and 0 not in axes
    if op == "Slice":
        axes = _axes(n, ranks[0])
        return counted[0] and axes is not None and 0 not in axes and not any(counted[1:])
    if op == "Transpose":
        perm = n.attr("perm")
        return perm is not None and perm[0] == 0
    if op == "Concat":
        return all(counted) and n.attr("axis") % ranks[0] != 0
    return False


def rows_refused(name: str, node: Any, operands: Sequence[Any]) -> CompileError:
    """The error for ONNX node ``node`` (named ``name``) reading row-counted ``operands``
    in a way that does not keep rows as rows."""
    read = [i for i, v in zip(node.input, operands) if isinstance(v, RowCounted)]
    made = sorted({v.producer for v in operands if isinstance(v, RowCounted)})
    return CompileError(f"ONNX node {name!r} ({node.op_type}) reads {read}, whose rows are "
                        f"counted at run time (from {made}); only ops that keep rows as rows "
                        "(elementwise, Gather of columns or at such indices, Squeeze, "
                        "Unsqueeze, Slice, Transpose and Concat off axis 0) may read them, "
                        "and a graph output returns its first rows")
