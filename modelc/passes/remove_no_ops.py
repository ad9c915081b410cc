"""remove_no_ops: nodes whose output equals one of their inputs are dropped, their users
reading that input instead. ONNX exports build attention masks with such steps (transformers'
mask code exports a row gathered element by element, casts to the dtype it already has, and
an ``Expand`` that broadcasts nothing) and reshape tensors to the shape they have; each would
otherwise be a kernel call, and bool ones have no kernel. Runs before
``eliminate_dead_code``, which drops what they leave unused.

The rules (``RULES``) are functions of a node that return the input its output equals, or
None. A node is kept when dropping it would make a graph output alias a graph input.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..graph import Graph, Node, Value
from ..ops._shapes import axis


def _same_dtype_cast(node: Node) -> Value | None:
    """``cast(x, dtype)`` where ``x`` already has ``dtype``."""
    if node.op == "cast" and node.inputs[0].dtype == node.output.dtype:
        return node.inputs[0]
    return None


def _add_zeros(node: Node) -> Value | None:
    """``x + 0`` for bool or integer ``x`` (exact, unlike a float ``-0.0 + 0``) where the
    constant zeros broadcast nothing: ``Expand`` imported as an addition."""
    if node.op != "add" or len(node.inputs) != 2 or node.attrs:
        return None
    for x, zeros in (node.inputs, node.inputs[::-1]):
        if (zeros.is_constant and not x.is_constant and x.dtype == node.output.dtype
                and np.dtype(x.dtype).kind in "biu" and x.shape == node.output.shape
                and not np.any(zeros.data)):
            return x
    return None


def _concat_of_slices(node: Node) -> Value | None:
    """``concat([x[a:b], x[b:c], ...], dim)`` whose unit-step slices of one ``x`` along
    ``dim`` cover all of it in order: ``Gather`` of a run-time row at ``arange`` indices."""
    if node.op != "concat" or not node.inputs:
        return None
    source = node.inputs[0].producer
    if source is None or source.op != "slice":
        return None
    x = source.inputs[0]
    rank = len(x.shape)
    dim = axis(node.attrs.get("dim", 0), rank)
    length = x.shape[dim]
    if not isinstance(length, int) or node.output.shape != x.shape:
        return None
    cursor = 0
    for part in node.inputs:
        piece = part.producer
        if (piece is None or piece.op != "slice" or piece.inputs[0] is not x
                or axis(piece.attrs["dim"], rank) != dim or piece.attrs.get("step", 1) != 1):
            return None
        start, end = piece.attrs.get("start"), piece.attrs.get("end")
        taken = range(length)[start:end]
        if taken.start != cursor:
            return None
        cursor = taken.stop
    return x if cursor == length else None


def _whole_slice(node: Node) -> Value | None:
    """A unit-step ``slice`` that keeps its input's shape, so all of it: paddle2onnx and
    jax2tf export such slices around convolutions (one copy each otherwise)."""
    if (node.op == "slice" and node.attrs.get("step", 1) == 1
            and node.output.shape == node.inputs[0].shape):
        return node.inputs[0]
    return None


def _same_shape_reshape(node: Node) -> Value | None:
    """A ``reshape`` to its input's own shape: transformers' attention reshapes its
    (B, H, T, D) output to (B, -1, T, D) before the head permute (it would hide the
    attention from ``fuse_attention``)."""
    if node.op == "reshape" and node.output.shape == node.inputs[0].shape:
        return node.inputs[0]
    return None


def nan_guarded(node: Node) -> Value | None:
    """``s`` when ``node`` is the NaN guard ``where(s != s, 0, s)`` (torch's export zeroes a
    masked softmax's NaN rows so), else None."""
    if node.op != "where" or node.attrs.get("input") != 0.0:
        return None
    named = node.named_inputs()
    test, s = named.get("condition"), named.get("other")
    if (test is None or s is None or test.producer is None or test.producer.op != "ne"
            or list(test.producer.inputs) != [s, s]):
        return None
    return s


def _nan_guard_of_finite_scores(node: Node) -> Value | None:
    """``where(s != s, 0, s)`` of ``s = softmax(scores)`` where the scores are a matmul's
    or linear's product, plus a constant mask finite everywhere if any: torch's dynamo
    export of ``scaled_dot_product_attention`` zeroes the NaN rows a mask of only -inf
    makes, and such a mask cannot make one here (only non-finite activations could, whose
    attention is NaN either way). The guard would hide the attention from
    ``fuse_attention``."""
    s = nan_guarded(node)
    if s is None or s.producer is None or s.producer.op != "softmax":
        return None
    scores = s.producer.inputs[0].producer
    if scores is not None and scores.op == "add" and len(scores.inputs) == 2:
        unmasked = [x for x, mask in (scores.inputs, scores.inputs[::-1])
                    if mask.data is not None and np.all(np.isfinite(mask.data))]
        scores = unmasked[0].producer if unmasked and not scores.attrs else None
    return s if scores is not None and scores.op in ("matmul", "linear") else None


RULES: tuple[Callable[[Node], Value | None], ...] = (
    _same_dtype_cast,
    _add_zeros,
    _concat_of_slices,
    _whole_slice,
    _same_shape_reshape,
    _nan_guard_of_finite_scores,
)


def remove_no_ops(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        for rule in RULES:
            same = rule(node)
            if same is not None and not (node.output in graph.outputs.values()
                                         and same in graph.inputs.values()):
                graph.replace_uses(node.output, same)
                break
    return graph
