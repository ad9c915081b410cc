"""fuse_attention: a transformer's attention over heads split from its projections becomes one
``head_attention`` node.

The pattern (as ``nn`` and torch's exporter write it; ``fuse_epilogues`` has put a mask of
one row for every query into the score matmul, a mask per query stays an ``add``)::

    q = permute(q4, (0, 2, 1, 3)); v = permute(v4, (0, 2, 1, 3))    # (B, H, T, D)
    y = permute(matmul(softmax(matmul(q, kt) [+ mask], -1), v), (0, 2, 1, 3))

becomes ``y = head_attention(q4, kt, v4[, mask])``: the query's and value's heads are read
where the projections wrote them and the result is written in the (B, T, H, D) layout the
output projection reads, so three of the four head permutes go, and each block of score rows
stays in cache between its matmul, softmax and weighted sum (``templates/attention.py``).
K^T's permute stays: it is the transposed copy the score matmul reads. Only nodes whose
intermediate values have no other users are fused, with a float mask the kernel takes
(``ops.head_attention.mask_form``).

A constant scalar ``mul`` on the permuted query and/or on K^T before the score matmul (torch's
exporters write ``scaled_dot_product_attention``'s ``1 / sqrt(D)`` so, the dynamo one as
``D ** -0.25`` on each) is fused too: their product scales the query once, one ``mul`` over
(B, T, H, D) instead of over the (B, H, T, S) scores, or none when the query is a linear's
output only it reads (through reshapes): the linear's weights and bias take the factor
(``fold_scales``).

torch's export of ``scaled_dot_product_attention`` with a mask zeroes the rows of weights a
mask of only -inf leaves NaN, ``where(w != w, 0, w)`` after the softmax (``remove_no_ops``
drops it where no row can be so). That guard fuses too: the kernel's rows for such queries
are NaN (every provider's softmax of an all -inf row), so the same ``where`` over the fused
(B, T, H, D) result zeroes exactly them, as the weighted sum of zero weights does.
"""

from __future__ import annotations

import math

from ..graph import Graph, Node, Value
from ..ops.head_attention import mask_form
from .fold_scales import scalar_factor, scale_linear, source_linear
from .remove_no_ops import nan_guarded

HEADS = (0, 2, 1, 3)
"""The permute between (B, T, H, D) and (B, H, T, D), its own inverse."""


def _only_use(graph: Graph, value: Value, op: str) -> Node | None:
    """The producer of ``value`` if it is an ``op`` node whose output only that one user
    reads (and no graph output is it)."""
    node = value.producer
    if node is None or node.op != op or len(value.users) != 1 or any(
            out is value for out in graph.outputs.values()):
        return None
    return node


def _heads(graph: Graph, value: Value) -> Node | None:
    """The head permute producing ``value`` from a rank-4 (B, T, H, D), if only one user."""
    node = _only_use(graph, value, "permute")
    if node is None or tuple(node.attrs["dims"]) != HEADS:
        return None
    return node


def _unscaled(graph: Graph, value: Value) -> tuple[Value, list[Node], float]:
    """``value`` without the constant scalar ``mul`` producing it (if only one user), that
    ``mul`` (or none) and its factor (or 1)."""
    node = _only_use(graph, value, "mul")
    factor = None if node is None else scalar_factor(node)
    if node is None or factor is None or not math.isfinite(factor) or factor == 0.0:
        return value, [], 1.0
    source = next(v for v in node.inputs if not v.is_constant)
    if source.shape != value.shape or value.dtype != "float32":
        return value, [], 1.0
    return source, [node], factor


def _guarded(graph: Graph, value: Value) -> tuple[Value, list[Node]]:
    """``value`` without the NaN guard ``where(w != w, 0, w)`` producing it (if its ``ne``
    and ``where`` are the weights' only users), and those two nodes (or none)."""
    node = _only_use(graph, value, "where")
    weights = None if node is None else nan_guarded(node)
    if node is None or weights is None:
        return value, []
    test = _only_use(graph, node.named_inputs()["condition"], "ne")
    if (test is None or set(weights.users) != {test, node}
            or any(out is weights for out in graph.outputs.values())):
        return value, []
    return weights, [test, node]


def _masked_scores(graph: Graph, value: Value) -> tuple[list[Node], Value | None] | None:
    """The nodes making the masked scores ``value`` and the mask: a matmul with the mask as
    its fused residual (or none), or a plain matmul and an ``add`` of the mask (one the
    matmul could not take as a residual, e.g. one row per query)."""
    scores = _only_use(graph, value, "matmul")
    if scores is not None:
        epilogue = scores.attrs.get("epilogue", ())
        if epilogue not in ((), ("add",)):
            return None
        return [scores], scores.named_inputs().get("residual")
    add = _only_use(graph, value, "add")
    if add is None or add.attrs.get("epilogue") or len(add.inputs) != 2:
        return None
    for first, second in (add.inputs, add.inputs[::-1]):
        scores = _only_use(graph, first, "matmul")
        if scores is not None and not scores.attrs.get("epilogue"):
            return [scores, add], second
    return None


def _match(graph: Graph, out: Node) -> tuple[list[Node], list[Value], float, bool] | None:
    """The nodes of one attention ending at the head permute ``out``, the fused node's
    inputs (query, K^T, value[, mask]), the factor scaling the scores and whether a NaN
    guard was among them, or None."""
    if out.op != "permute" or tuple(out.attrs["dims"]) != HEADS:
        return None
    weighted = _only_use(graph, out.inputs[0], "matmul")
    if weighted is None or weighted.attrs.get("epilogue"):
        return None
    named = weighted.named_inputs()
    weights, guard = _guarded(graph, named["input"])
    softmax = weights.producer if guard else _only_use(graph, weights, "softmax")
    v_heads = _heads(graph, named["other"])
    if (softmax is None or softmax.op != "softmax" or v_heads is None
            or softmax.attrs["dim"] not in (-1, 3)):
        return None
    masked = _masked_scores(graph, softmax.inputs[0])
    if masked is None:
        return None
    scoring, mask = masked
    q, q_scale, q_factor = _unscaled(graph, scoring[0].inputs[0])
    kt, k_scale, k_factor = _unscaled(graph, scoring[0].inputs[1])
    q_heads = _heads(graph, q)
    if q_heads is None or len(kt.shape) != 4:
        return None
    b, t = q_heads.inputs[0].shape[:2]
    if mask is not None and (mask.dtype != "float32"
                             or mask_form(mask.shape, b, t, kt.shape[3]) is None):
        return None
    inputs = [q_heads.inputs[0], kt, v_heads.inputs[0]] + ([mask] if mask is not None else [])
    nodes = [q_heads, v_heads, *q_scale, *k_scale, *scoring, softmax, *guard, weighted, out]
    return nodes, inputs, q_factor * k_factor, bool(guard)


def fuse_attention(graph: Graph) -> Graph:
    for out in list(graph.nodes):
        matched = _match(graph, out)
        if matched is None:
            continue
        nodes, inputs, factor, guarded = matched
        result = out.output
        linear = None if factor == 1.0 else source_linear(graph, inputs[0])
        for node in reversed(nodes):
            graph.remove(node)
        position = max((graph.nodes.index(v.producer) for v in inputs
                        if v.producer is not None), default=-1) + 1
        if linear is not None:
            scale_linear(linear, factor)
        elif factor != 1.0:
            query = inputs[0]
            scaled = Value(f"{out.name}_query_scaled", query.shape, query.dtype)
            inputs[0] = graph.insert(position, scaled.name, "mul", [query], ("input",),
                                     {"other": factor}, out.meta, scaled)
            position += 1
        attended = (Value(f"{out.name}_attended", result.shape, result.dtype) if guarded
                    else result)
        graph.insert(position, f"{out.name}_attention", "head_attention", inputs,
                     ("query", "key_t", "value", "mask")[:len(inputs)], {}, out.meta, attended)
        if guarded:
            nan = Value(f"{out.name}_nan", result.shape, "bool")
            graph.insert(position + 1, nan.name, "ne", [attended, attended],
                         ("input", "other"), {}, out.meta, nan)
            graph.insert(position + 2, f"{out.name}_unblocked", "where", [nan, attended],
                         ("condition", "other"), {"input": 0.0}, out.meta, result)
    return graph
