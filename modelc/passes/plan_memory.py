"""plan_memory: place every activation in one arena, sharing bytes between values whose
lifetimes do not overlap (greedy by size, as TFLite's planner). A reshape's output is a view:
it shares its input's storage, whose lifetime then covers both.

An op's scratch (``OpDef.scratch``) is placed like a value that lives only during its node.
Sizes are taken at the largest value of every symbolic dim. Results go in ``graph.meta``:
``arena`` ({id(value): byte offset}), ``scratch`` ({(id(node), k): byte offset}),
``arena_bytes`` and ``activation_bytes`` (the sum of all
activations, what a planner-less layout would need).
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..graph import Graph, Value

ALIGN = 16
Key = int | tuple[int, int]
"""A storage root (a value's id) or a node's scratch buffer (id(node), index)."""


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


VIEW_OPS = ("reshape",)
"""Ops whose output is the same bytes as their input: they share its storage."""


def _storage_roots(graph: Graph) -> dict[int, int]:
    """Each value's storage: its own, or that of the value it is a view of."""
    root: dict[int, int] = {}
    for node in graph.nodes:
        source = node.inputs[0] if node.inputs else None
        for value in node.outputs:
            if node.op in VIEW_OPS and source is not None and not source.is_constant:
                root[id(value)] = root.get(id(source), id(source))
            else:
                root[id(value)] = id(value)
    for value in graph.inputs.values():
        root.setdefault(id(value), id(value))
    return root


def plan_memory(graph: Graph) -> Graph:
    end = len(graph.nodes)
    root = _storage_roots(graph)
    first: dict[Key, int] = {}
    last: dict[Key, int] = {}
    size: dict[Key, int] = {}
    values = graph.values()
    for value in values:
        nbytes = _aligned(graph.max_numel(value) * np.dtype(value.dtype).itemsize)
        size[root[id(value)]] = max(size.get(root[id(value)], 0), nbytes)
    for value in graph.inputs.values():
        first[root[id(value)]] = -1
    scratch: list[Key] = []
    for index, node in enumerate(graph.nodes):
        for k, shape in enumerate(ops.get(node.op).scratch(node)):
            slot = (id(node), k)
            scratch.append(slot)
            size[slot] = _aligned(graph.max_numel(Value("scratch", shape, "float32")) * 4)
            first[slot] = last[slot] = index
        for value in node.outputs:
            first.setdefault(root[id(value)], index)
        for value in node.inputs:
            if not value.is_constant:
                last[root[id(value)]] = index
    for value in graph.outputs.values():
        if not value.is_constant:
            last[root[id(value)]] = end
    placed: list[tuple[int, int, int, int]] = []  # (offset, size, first, last)
    offsets: dict[Key, int] = {}
    for key in sorted(size, key=lambda k: (-size[k], first[k])):
        start, stop = first[key], last.get(key, first[key])
        offset = 0
        for other_offset, other_size, other_first, other_last in sorted(placed):
            overlaps_in_time = not (stop < other_first or other_last < start)
            if overlaps_in_time and offset + size[key] > other_offset \
                    and other_offset + other_size > offset:
                offset = _aligned(other_offset + other_size)
        offsets[key] = offset
        placed.append((offset, size[key], start, stop))
    graph.meta["arena"] = {id(v): offsets[root[id(v)]] for v in values}
    graph.meta["scratch"] = {key: offsets[key] for key in scratch}
    graph.meta["arena_bytes"] = max((o + s for o, s, _, _ in placed), default=0)
    graph.meta["activation_bytes"] = sum(
        _aligned(graph.max_numel(v) * np.dtype(v.dtype).itemsize) for v in values)
    return graph
