"""fuse_attention: a transformer's attention over heads split from its projections becomes one
``head_attention`` node.

The pattern (as ``nn`` and torch's exporter write it, after ``fuse_epilogues`` has put the
additive mask into the score matmul)::

    q = permute(q4, (0, 2, 1, 3)); v = permute(v4, (0, 2, 1, 3))    # (B, H, T, D)
    y = permute(matmul(softmax(matmul(q, kt [+ mask]), -1), v), (0, 2, 1, 3))

becomes ``y = head_attention(q4, kt, v4[, mask])``: the query's and value's heads are read
where the projections wrote them and the result is written in the (B, T, H, D) layout the
output projection reads, so three of the four head permutes go, and each block of score rows
stays in cache between its matmul, softmax and weighted sum (``templates/attention.py``).
K^T's permute stays: it is the transposed copy the score matmul reads. Only nodes whose
intermediate values have no other users are fused, with a mask that the kernel takes (one
row per batch element or one for all).
"""

from __future__ import annotations

from ..graph import Graph, Node, Value
from ..ops.head_attention import mask_rows

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


def _match(graph: Graph, out: Node) -> list[Node] | None:
    """The nodes of one attention ending at the head permute ``out``: [q's permute, v's
    permute, score matmul, softmax, weighted sum, out], or None."""
    if out.op != "permute" or tuple(out.attrs["dims"]) != HEADS:
        return None
    weighted = _only_use(graph, out.inputs[0], "matmul")
    if weighted is None or weighted.attrs.get("epilogue"):
        return None
    named = weighted.named_inputs()
    softmax = _only_use(graph, named["input"], "softmax")
    v_heads = _heads(graph, named["other"])
    if softmax is None or v_heads is None or softmax.attrs["dim"] not in (-1, 3):
        return None
    scores = _only_use(graph, softmax.inputs[0], "matmul")
    if scores is None or scores.attrs.get("epilogue", ()) not in ((), ("add",)):
        return None
    named = scores.named_inputs()
    q_heads = _heads(graph, named["input"])
    kt = named["other"]
    if q_heads is None or len(kt.shape) != 4:
        return None
    mask = named.get("residual")
    b, s = q_heads.inputs[0].shape[0], kt.shape[3]
    if mask is not None and mask_rows(mask.shape, b, s) is None:
        return None
    return [q_heads, v_heads, scores, softmax, weighted, out]


def fuse_attention(graph: Graph) -> Graph:
    for out in list(graph.nodes):
        nodes = _match(graph, out)
        if nodes is None:
            continue
        q_heads, v_heads, scores, _, _, _ = nodes
        named = scores.named_inputs()
        inputs = [q_heads.inputs[0], named["other"], v_heads.inputs[0]]
        if "residual" in named:
            inputs.append(named["residual"])
        result = out.output
        for node in reversed(nodes):
            graph.remove(node)
        position = max((graph.nodes.index(v.producer) for v in inputs
                        if v.producer is not None), default=-1) + 1
        graph.insert(position, f"{out.name}_attention", "head_attention", inputs,
                     ("query", "key_t", "value", "mask")[:len(inputs)], {}, scores.meta,
                     result)
    return graph
