"""compose_permutes: ``permute(permute(x, p), q)`` becomes ``permute(x, p[q])``, and an
identity permutation disappears. Multi-head attention produces such chains (heads split,
then the key transposed), and each permute is a full copy."""

from __future__ import annotations

from ..graph import Graph


def compose_permutes(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        if node.op != "permute":
            continue
        source = node.inputs[0]
        inner = source.producer
        rank = len(source.shape)
        dims = [d % rank for d in node.attrs["dims"]]
        if inner is not None and inner.op == "permute" and len(source.users) == 1 \
                and source not in graph.outputs.values():
            first = [d % rank for d in inner.attrs["dims"]]
            dims = [first[d] for d in dims]
            node.inputs = [inner.inputs[0]]
            inner.inputs[0].users.append(node)
            source.users.remove(node)
            graph.remove(inner)
            source = node.inputs[0]
        node.attrs["dims"] = tuple(dims)
        if dims == list(range(rank)) and node.output not in graph.outputs.values():
            graph.replace_uses(node.output, source)
            graph.remove(node)
    return graph
