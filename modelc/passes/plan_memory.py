"""plan_memory: place every activation in one arena, sharing bytes between values whose
lifetimes do not overlap (greedy by size, as TFLite's planner). A reshape's output is a view:
it shares its input's storage, whose lifetime then covers both. An input an op declares it
can take inside its output (``OpDef.input_slices``: a concat's parts along an axis with only
1s before it) lives there, at its byte offset, so its producer writes it in place and the op
copies nothing; ``within`` holds each value's offset inside its storage.

An op's scratch (``OpDef.scratch``) is placed like a value that lives only during its node.

The plan is symbolic: a buffer's size is a product of symbolic dims times a constant, and
its offset is the largest end among the buffers it sits on top of (those alive at the same
time that the greedy placement at the dims' largest values put below it). Sizes only grow
with the dims, so that order stays a valid, non-overlapping layout for every dims in range,
and the arena a run needs follows the dims it is given (``MemoryPlan.evaluate``).

Results go in ``graph.meta``: ``plan`` (a ``MemoryPlan``), ``slots`` ({id(value): its
storage's buffer in the plan}), ``within`` ({id(value): its byte offset in that buffer}),
``arena`` ({id(value): byte offset at the largest dims}), ``scratch`` ({(id(node), k): byte
offset there}), ``arena_bytes`` (the arena at the largest dims), ``arena_bytes_min`` (at the
smallest) and ``activation_bytes`` (the sum of all activations and op scratch at the largest
dims, what a planner-less layout would need).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import ops
from ..graph import Graph, Shape, Value

ALIGN = 16
Key = int | tuple[int, int]
"""A storage root (a value's id) or a node's scratch buffer (id(node), index)."""
Monomial = tuple[int, tuple[str, ...]]
"""``bytes * product(dims)``: a buffer's unaligned size."""


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


VIEW_OPS = ("reshape",)
"""Ops whose output is the same bytes as their input: they share its storage."""


def monomial(shape: Shape, itemsize: int) -> Monomial:
    """The byte size of a tensor of ``shape`` as a constant times its symbolic dims."""
    constant = math.prod(d for d in shape if isinstance(d, int)) * itemsize
    return constant, tuple(sorted(d for d in shape if isinstance(d, str)))


def size_at(size: tuple[Monomial, ...], dims: dict[str, int]) -> int:
    """A buffer's aligned size at ``dims``: the largest of its views' monomials."""
    return max((_aligned(c * math.prod(dims[d] for d in ds)) for c, ds in size), default=0)


@dataclass(frozen=True)
class MemoryPlan:
    """The symbolic arena. Buffer ``i`` has ``sizes[i]`` and starts where the highest of the
    buffers ``below[i]`` ends (0 if none); buffers are in that dependency order."""

    sizes: tuple[tuple[Monomial, ...], ...]
    below: tuple[tuple[int, ...], ...]

    def evaluate(self, dims: dict[str, int]) -> tuple[list[int], int]:
        """Every buffer's offset at ``dims``, and the arena's size."""
        offsets: list[int] = []
        ends: list[int] = []
        for size, below in zip(self.sizes, self.below):
            offsets.append(max((ends[j] for j in below), default=0))
            ends.append(offsets[-1] + size_at(size, dims))
        return offsets, max(ends, default=0)

    def is_constant(self) -> list[bool]:
        """Whether each buffer's offset is the same for every dims."""
        fixed: list[bool] = []
        for below in self.below:
            fixed.append(all(fixed[j] and all(not ds for _, ds in self.sizes[j])
                             for j in below))
        return fixed


def _storage_roots(graph: Graph) -> tuple[dict[int, int], dict[int, int]]:
    """Each value's storage and its byte offset there: its own, that of the value it is a
    view of (a reshape, or an op's output that is a run of its input's bytes:
    ``OpDef.output_views``, e.g. a split's chunks), or that of an op's output it is written
    straight into (``OpDef.input_slices``, e.g. a concat's parts), unless it must stand
    alone: a graph input or output, a constant, a storage whose views in that output do not
    tile it exactly, or one already placed in another output."""
    root: dict[int, int] = {}
    shift: dict[int, int] = {}  # a view's byte offset in its storage
    outputs = {id(v) for v in graph.outputs.values()}
    for node in graph.nodes:
        source = node.inputs[0] if node.inputs and not node.inputs[0].is_constant else None
        views = {} if source is None else (
            dict.fromkeys(range(len(node.outputs)), 0) if node.op in VIEW_OPS
            else ops.get(node.op).output_views(node))
        for k, value in enumerate(node.outputs):
            if source is not None and k in views and (node.op in VIEW_OPS
                                                      or id(value) not in outputs):
                root[id(value)] = root.get(id(source), id(source))
                shift[id(value)] = shift.get(id(source), 0) + views[k]
            else:
                root[id(value)] = id(value)
    for value in graph.inputs.values():
        root.setdefault(id(value), id(value))
    alone = {root[id(v)] for v in (*graph.inputs.values(), *graph.outputs.values())
             if not v.is_constant}
    sizes: dict[int, set[int | None]] = {}  # storage -> the byte sizes of its views
    for value in graph.values():
        sizes.setdefault(root[id(value)], set()).add(_static_bytes(value))
    inside: dict[int, tuple[int, int]] = {}  # storage -> (the storage it sits in, offset)
    for node in graph.nodes:
        spans: dict[int, list[tuple[int, int, int]]] = {}  # storage -> its parts' spans
        for k, offset in ops.get(node.op).input_slices(node).items():
            part, key = node.inputs[k], root.get(id(node.inputs[k]))
            if part.is_constant or key is None or key in alone or key in inside \
                    or None in sizes[key]:
                continue
            at = shift.get(id(part), 0)
            if all(at != start for start, _, _ in spans.get(key, [])):  # a repeat is copied
                spans.setdefault(key, []).append((at, _static_bytes(part) or 0, offset - at))
        for key, parts in spans.items():
            if _tiles(sorted(parts), max(s or 0 for s in sizes[key])):
                inside[key] = (root[id(node.output)], parts[0][2])
    within: dict[int, int] = {}
    for value_id, key in root.items():
        offset = shift.get(value_id, 0)
        while key in inside:
            key, step = inside[key]
            offset += step
        root[value_id], within[value_id] = key, offset
    return root, within


def _tiles(parts: list[tuple[int, int, int]], size: int) -> bool:
    """Whether the spans (start, length, where the storage would start) of a storage's
    views, sorted, cover its ``size`` bytes exactly once and agree on where it starts."""
    end = 0
    for start, length, place in parts:
        if start != end or place != parts[0][2]:
            return False
        end += length
    return end == size


def _static_bytes(value: Value) -> int | None:
    """A value's byte size, or None when a dim is symbolic."""
    static = [d for d in value.shape if isinstance(d, int)]
    if len(static) < len(value.shape):
        return None
    return math.prod(static) * np.dtype(value.dtype).itemsize


def _buffers(graph: Graph) -> tuple[dict[Key, set[Monomial]], dict[Key, tuple[int, int]],
                                    list[Key]]:
    """Each buffer's sizes (one per view), its lifetime (first, last node index) and the
    scratch keys."""
    root, _ = _storage_roots(graph)
    first: dict[Key, int] = {}
    last: dict[Key, int] = {}
    size: dict[Key, set[Monomial]] = {}
    for value in graph.values():
        size.setdefault(root[id(value)], set()).add(
            monomial(value.shape, np.dtype(value.dtype).itemsize))
    for value in graph.inputs.values():
        first[root[id(value)]] = -1
    scratch: list[Key] = []
    for index, node in enumerate(graph.nodes):
        for k, shape in enumerate(ops.get(node.op).scratch(node)):
            slot = (id(node), k)
            scratch.append(slot)
            size[slot] = {monomial(shape, 4)}
            first[slot] = last[slot] = index
        for value in node.outputs:
            first.setdefault(root[id(value)], index)
        for value in node.inputs:
            if not value.is_constant:
                last[root[id(value)]] = index
    for value in graph.outputs.values():
        if not value.is_constant:
            last[root[id(value)]] = len(graph.nodes)
    lifetime = {key: (first[key], last.get(key, first[key])) for key in size}
    return size, lifetime, scratch


def _greedy(size: dict[Key, int], lifetime: dict[Key, tuple[int, int]]) -> dict[Key, int]:
    """Offsets at one set of sizes: largest first, each at the lowest gap that fits."""
    placed: list[tuple[int, int, int, int]] = []  # (offset, size, first, last)
    offsets: dict[Key, int] = {}
    for key in sorted(size, key=lambda k: (-size[k], lifetime[k][0])):
        start, stop = lifetime[key]
        offset = 0
        for other_offset, other_size, other_first, other_last in sorted(placed):
            overlaps_in_time = not (stop < other_first or other_last < start)
            if overlaps_in_time and offset + size[key] > other_offset \
                    and other_offset + other_size > offset:
                offset = _aligned(other_offset + other_size)
        offsets[key] = offset
        placed.append((offset, size[key], start, stop))
    return offsets


def _below(order: list[Key], offsets: dict[Key, int], size: dict[Key, int],
           lifetime: dict[Key, tuple[int, int]]) -> list[tuple[int, ...]]:
    """For each buffer (in ``order``, by offset), the buffers alive with it that lie below
    it, leaving out those already below another of them (they add no constraint)."""
    reach: list[int] = []  # bitset of every buffer transitively below
    below: list[tuple[int, ...]] = []
    for i, key in enumerate(order):
        start, stop = lifetime[key]
        direct = [j for j, other in enumerate(order[:i])
                  if size[other] and not (stop < lifetime[other][0] or lifetime[other][1] < start)
                  and offsets[other] + size[other] <= offsets[key]]
        implied = 0
        for j in direct:
            implied |= reach[j]
        kept = tuple(j for j in direct if not implied >> j & 1)
        everything = implied
        for j in kept:
            everything |= 1 << j
        reach.append(everything)
        below.append(kept)
    return below


def plan_memory(graph: Graph) -> Graph:
    sizes, lifetime, scratch = _buffers(graph)
    largest = {name: high for name, (_, high) in graph.dims.items()}
    smallest = {name: low for name, (low, _) in graph.dims.items()}
    at_max = {key: size_at(tuple(sizes[key]), largest) for key in sizes}
    greedy = _greedy(at_max, lifetime)
    # NOTE: zero-size buffers stay zero for every dims; they go first, at offset 0.
    order = sorted(sizes, key=lambda k: (at_max[k] > 0, greedy[k], lifetime[k][0]))
    below = _below(order, greedy, at_max, lifetime)
    plan = MemoryPlan(tuple(tuple(sorted(sizes[k])) for k in order), tuple(below))
    offsets, arena_bytes = plan.evaluate(largest)
    index = {key: i for i, key in enumerate(order)}
    root, within = _storage_roots(graph)
    values = graph.values()
    graph.meta["plan"] = plan
    graph.meta["slots"] = {**{id(v): index[root[id(v)]] for v in values},
                           **{key: index[key] for key in scratch}}
    graph.meta["within"] = {id(v): within[id(v)] for v in values}
    graph.meta["arena"] = {id(v): offsets[index[root[id(v)]]] + within[id(v)] for v in values}
    graph.meta["scratch"] = {key: offsets[index[key]] for key in scratch}
    graph.meta["arena_bytes"] = arena_bytes
    graph.meta["arena_bytes_min"] = plan.evaluate(smallest)[1]
    graph.meta["activation_bytes"] = sum(
        size_at((monomial(v.shape, np.dtype(v.dtype).itemsize),), largest) for v in values
    ) + sum(at_max[key] for key in scratch)
    return graph
