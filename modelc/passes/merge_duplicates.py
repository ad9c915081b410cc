"""merge_duplicates: a node that repeats an earlier one (the same op, the same input values
in the same order, equal attributes) is dropped and its users read the earlier outputs.

Exporters repeat work: YOLOv5's Focus slices the image's even rows twice and its odd rows
twice (``x[..., ::2, ::2]``, ``x[..., ::2, 1::2]``, ...: four row slices, two distinct),
and ddddocr's detector copied 2 x 2 MB for them at every inference. Nodes whose attributes
hold anything but numbers, strings, booleans, None, numpy dtypes and tuples or lists of them
(a loop's body) stay, as do nodes with an output that is a graph output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph

Key = tuple[Any, ...]


def _plain(value: Any) -> Key | None:
    """``value`` as a hashable key (floats by ``repr``: NaN equals NaN), or None."""
    if isinstance(value, (tuple, list)):
        items = [_plain(v) for v in value]
        return None if any(i is None for i in items) else ("seq", *items)
    if isinstance(value, float):
        return ("float", repr(value))
    if value is None or isinstance(value, (bool, int, str)):
        return (type(value).__name__, value)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return ("dtype", np.dtype(value).name)  # a full's element type
    return None


def merge_duplicates(graph: Graph) -> Graph:
    outputs = {id(v) for v in graph.outputs.values()}
    seen: dict[Key, Any] = {}
    for node in list(graph.nodes):
        attrs = _plain(sorted(node.attrs.items()))
        if attrs is None or any(id(v) in outputs for v in node.outputs):
            continue
        key = (node.op, tuple(id(v) for v in node.inputs), node.input_names, attrs,
               len(node.outputs))
        first = seen.setdefault(key, node)
        if first is node:
            continue
        for old, new in zip(node.outputs, first.outputs):
            graph.replace_uses(old, new)
        graph.remove(node)
    return graph
