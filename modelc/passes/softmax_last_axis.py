"""softmax_last_axis: ``softmax(x, dim)`` along an inner axis becomes ``permute`` (that axis
last), ``softmax`` along the last axis, ``permute`` back: the kernel normalises rows. Runs
before ``compose_permutes``, which merges the new permutes with any beside them."""

from __future__ import annotations

from ..graph import Graph, Value
from ..ops._shapes import axis


def _permute(graph: Graph, position: int, source: Value, dims: list[int], meta: dict,
             output: Value | None = None) -> Value:
    """Insert ``permute(source, dims)`` at ``position``, writing ``output`` (or a new value
    named after it)."""
    name = f"{source.name}_permuted"
    if output is None:
        output = Value(name, tuple(source.shape[d] for d in dims), source.dtype)
    return graph.insert(position, name, "permute", [source], ("input",),
                        {"dims": tuple(dims)}, meta, output)


def softmax_last_axis(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        if node.op != "softmax":
            continue
        source, rank = node.inputs[0], len(node.inputs[0].shape)
        dim = axis(node.attrs["dim"], rank)
        if dim == rank - 1:
            continue
        order = [d for d in range(rank) if d != dim] + [dim]
        position = graph.nodes.index(node)
        moved = _permute(graph, position, source, order, node.meta)
        source.users.remove(node)
        node.inputs = [moved]
        moved.users.append(node)
        node.attrs = {**node.attrs, "dim": rank - 1}
        result = node.output
        node.outputs = [Value(f"{node.name}_rows", moved.shape, result.dtype, node)]
        _permute(graph, position + 2, node.output, [order.index(d) for d in range(rank)],
                 node.meta, output=result)
    return graph
