"""plan_memory: place every activation in one arena, sharing bytes between values whose
lifetimes do not overlap (greedy by size, as TFLite's planner).

Sizes are taken at the largest value of every symbolic dim. Results go in ``graph.meta``:
``arena`` ({id(value): byte offset}), ``arena_bytes`` and ``activation_bytes`` (the sum of all
activations, what a planner-less layout would need).
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Value

ALIGN = 16


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def plan_memory(graph: Graph) -> Graph:
    end = len(graph.nodes)
    first: dict[int, int] = {id(v): -1 for v in graph.inputs.values()}
    last: dict[int, int] = {}
    values: dict[int, Value] = {id(v): v for v in graph.inputs.values()}
    for index, node in enumerate(graph.nodes):
        for value in node.outputs:
            first[id(value)] = index
            values[id(value)] = value
        for value in node.inputs:
            if not value.is_constant:
                last[id(value)] = index
    for value in graph.outputs.values():
        last[id(value)] = end
    size = {key: _aligned(graph.max_numel(v) * np.dtype(v.dtype).itemsize)
            for key, v in values.items()}
    placed: list[tuple[int, int, int, int]] = []  # (offset, size, first, last)
    arena: dict[int, int] = {}
    for key in sorted(values, key=lambda k: (-size[k], first[k])):
        start, stop = first[key], last.get(key, first[key])
        offset = 0
        for other_offset, other_size, other_first, other_last in sorted(placed):
            overlaps_in_time = not (stop < other_first or other_last < start)
            if overlaps_in_time and offset + size[key] > other_offset \
                    and other_offset + other_size > offset:
                offset = _aligned(other_offset + other_size)
        arena[key] = offset
        placed.append((offset, size[key], start, stop))
    graph.meta["arena"] = arena
    graph.meta["arena_bytes"] = max((o + s for o, s, _, _ in placed), default=0)
    graph.meta["activation_bytes"] = sum(size.values())
    return graph
