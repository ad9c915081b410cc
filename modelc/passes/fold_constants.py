"""fold_constants: evaluate at compile time every node whose inputs are all constants.

Such nodes come from model code that builds masks or scales from parameters (e.g. a causal
mask from ``np.tril``, ``weight * 2``). Their outputs become constants, so no kernel runs
for them. Nodes whose attrs name symbolic dims, or that produce a graph output, stay.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ..graph import Graph, Value
from ..interpreter import run_node


def _names_symbolic_dims(value: object) -> bool:
    if isinstance(value, str):
        return True
    if isinstance(value, (tuple, list)):
        return any(isinstance(v, str) or _names_symbolic_dims(v) for v in value
                   if not isinstance(v, (int, float)))
    return False


def fold_constants(graph: Graph) -> Graph:
    outputs = {id(v) for v in graph.outputs.values()}
    for node in list(graph.nodes):
        if not all(v.is_constant for v in node.inputs) or not node.inputs:
            continue
        if any(id(v) in outputs for v in node.outputs):
            continue
        if any(_names_symbolic_dims(v) for k, v in node.attrs.items()
               if k not in ("padding", "mode", "approximate")):
            continue
        results = run_node(node, [cast(np.ndarray, v.data) for v in node.inputs])
        results = results if len(node.outputs) > 1 else (results,)
        for value, result in zip(node.outputs, results):
            data = np.asarray(result)
            graph.replace_uses(value, Value(f"{value.name}_folded", tuple(data.shape),
                                            str(data.dtype), data=data))
        graph.remove(node)
    return graph
