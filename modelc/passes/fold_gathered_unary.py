"""fold_gathered_unary: an elementwise unary op on rows gathered from a constant table runs
on the table instead, at compile time.

``f(embedding(i, table))`` is ``embedding(i, f(table))`` for an elementwise ``f``: each
gathered element is an element of the table. Magika's byte embedding (2048 rows gathered
from a 258 x 64 table, then gelu_tanh) ran the activation over 2048 rows at every
inference; it now runs once over 258. It applies to the ABI's unary ops (no attributes)
when the gather's output has no other user and is no graph output; the table is computed
by the op's reference, as ``fold_constants`` does.
"""

from __future__ import annotations

import numpy as np

from wasm_kernels.abi import UNARY_OPS

from ..graph import Graph, Node, Value
from ..interpreter import run_node


def _gathered_table(graph: Graph, node: Node) -> Node | None:
    """The embedding of a constant table that feeds ``node`` alone, or None."""
    if node.op not in UNARY_OPS or node.attrs or len(node.inputs) != 1:
        return None
    gather = node.inputs[0].producer
    if gather is None or gather.op != "embedding" or len(node.inputs[0].users) != 1 \
            or node.inputs[0] in graph.outputs.values():
        return None
    table = gather.named_inputs().get("weight")
    return gather if table is not None and table.is_constant and table.dtype == "float32" \
        else None


def fold_gathered_unary(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        gather = _gathered_table(graph, node)
        if gather is None:
            continue
        table = gather.named_inputs()["weight"]
        data = np.asarray(run_node(node, [np.asarray(table.data)]))
        folded = Value(f"{table.name}_{node.op}", tuple(data.shape), str(data.dtype), data=data)
        index = gather.inputs.index(table)
        table.users.remove(gather)
        gather.inputs[index] = folded
        folded.users.append(gather)
        graph.replace_uses(node.output, gather.output)
        graph.remove(node)
    return graph
