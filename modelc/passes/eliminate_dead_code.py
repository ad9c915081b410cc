"""eliminate_dead_code: drop nodes whose outputs reach no graph output."""

from __future__ import annotations

from ..graph import Graph


def eliminate_dead_code(graph: Graph) -> Graph:
    live = {id(v) for v in graph.outputs.values()}
    kept = []
    for node in reversed(graph.nodes):
        if any(id(v) in live for v in node.outputs):
            kept.append(node)
            live.update(id(v) for v in node.inputs)
        else:
            for value in node.inputs:
                value.users.remove(node)
    graph.nodes = kept[::-1]
    return graph
