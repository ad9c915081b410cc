"""fuse_epilogues: fold an elementwise op into the epilogue of the op that produces its input.

Rule: ``y = f(p(...))`` becomes ``y = p(..., epilogue=(f,))`` when ``f`` is in ``p``'s
``OpDef.epilogues``, ``p``'s output has no other user and is not a graph output, and ``f``
takes only that one input. Chains fuse in order (``epilogue=(f, g)``).
"""

from __future__ import annotations

from .. import ops
from ..graph import Graph


def fuse_epilogues(graph: Graph) -> Graph:
    outputs = {id(v) for v in graph.outputs.values()}
    kept = []
    for node in graph.nodes:
        source = node.inputs[0] if len(node.inputs) == 1 and not node.attrs else None
        producer = source.producer if source is not None else None
        if (producer is not None and len(producer.outputs) == 1
                and node.op in ops.get(producer.op).epilogues
                and len(source.users) == 1 and id(source) not in outputs):
            producer.attrs["epilogue"] = tuple(producer.attrs.get("epilogue", ())) + (node.op,)
            value = node.output
            producer.outputs = [value]
            value.producer = producer
            continue
        kept.append(node)
    graph.nodes = kept
    return graph
