"""paddle2onnx's ``set_value`` (``buffer[:, i:j] = x``), folded into one ``SetSlice``.

paddle2onnx writes a slice of a tensor with run-time bounds as

    ScatterElements(data, Tile(Reshape(Range(a, b, 1))), Expand(x, Shape(Slice(data, a, b))))

whose Range, Slice, Tile and Expand all have shapes decided by the values of ``a`` and ``b``.
PaddleOCR's table recognizer (SLANet) does this in its decoder loop, at the step counter, to
store each step's output. ``fold_set_value`` rewrites the pattern, in the graph and in every
subgraph, into one ``SetSlice(data, x, a, b, axis)`` node of the ``DOMAIN`` domain (the dead
Range / Slice / Tile / Expand go), and ``set_slice`` imports it with fixed shapes only:
``where(a <= position < b, x, data)`` over the positions along ``axis``, ``x`` broadcast
along it. Where onnxruntime runs the pattern (``0 <= a``; the Range and the Slice of equal
length), both write the same elements.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .node import OnnxNode

DOMAIN = "wasmnn"
"""The domain of ``SetSlice``, an op only this rewrite makes."""
_PASSING = ("Squeeze", "Unsqueeze", "Identity")
"""Ops that keep the one value of a start or an end (a scalar against a one-element list)."""


class _Graph:
    """A graph's producers, consumers and constants (Constant nodes and initializers)."""

    def __init__(self, graph: Any):
        from onnx import helper, numpy_helper

        self.producer = {out: node for node in graph.node for out in node.output}
        self.constants = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant" and len(node.attribute) == 1:
                value = helper.get_attribute_value(node.attribute[0])
                if node.attribute[0].name == "value":
                    self.constants[node.output[0]] = numpy_helper.to_array(value)

    def made(self, name: str, op_type: str) -> Any | None:
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type and \
            node.domain in ("", "ai.onnx") else None

    def chain(self, name: str, op_types: tuple[str, ...]) -> list[Any]:
        """The nodes making ``name`` through ``op_types`` (each the first input of the one
        before), or Nones when the chain is not there."""
        nodes: list[Any] = []
        for op_type in op_types:
            node = self.made(name, op_type)
            if node is None:
                return [None] * len(op_types)
            nodes.append(node)
            name = node.input[0] if op_type != "Expand" else node.input[1]
        return nodes

    def root(self, name: str) -> str:
        """``name`` behind the squeezes and identities that keep its one value."""
        node = self.producer.get(name)
        while node is not None and node.op_type in _PASSING:
            name = node.input[0]
            node = self.producer.get(name)
        return name

    def ints(self, name: str) -> list[int] | None:
        """The integers of constant ``name`` (behind squeezes), or None."""
        value = self.constants.get(self.root(name))
        return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def _attr(node: Any, name: str, default: Any) -> Any:
    from onnx import helper

    found = [a for a in node.attribute if a.name == name]
    return helper.get_attribute_value(found[0]) if found else default


def _match(scatter: Any, g: _Graph) -> Any | None:
    """The ``SetSlice`` node doing what ``scatter`` does, or None."""
    from onnx import helper

    data, indices, updates = scatter.input
    tile, reshape, ranged = g.chain(indices, ("Tile", "Reshape", "Range"))
    expand, shape, sliced = g.chain(updates, ("Expand", "Shape", "Slice"))
    if ranged is None or sliced is None or len(sliced.input) < 4 \
            or _attr(scatter, "reduction", b"none") != b"none" \
            or _attr(shape, "start", 0) != 0 or _attr(shape, "end", None) is not None:
        return None
    target = g.ints(reshape.input[1])
    if target is None or g.ints(ranged.input[2]) != [1]:
        return None
    rank = len(target)
    axis = _attr(scatter, "axis", 0) % rank
    steps = g.ints(sliced.input[4]) if len(sliced.input) > 4 and sliced.input[4] else [1]
    axes = g.ints(sliced.input[3])
    if (sliced.input[0] != data or axes is None or len(axes) != 1 or axes[0] % rank != axis
            or steps != [1] or any(t != 1 for k, t in enumerate(target) if k != axis)
            or g.root(sliced.input[1]) != g.root(ranged.input[0])
            or g.root(sliced.input[2]) != g.root(ranged.input[1])):
        return None
    return helper.make_node("SetSlice", [data, expand.input[0], *ranged.input[:2]],
                            list(scatter.output), scatter.name, domain=DOMAIN, axis=axis)


def _bodies(node: Any) -> list[Any]:
    """The subgraphs of ``node`` (branches, loop bodies)."""
    return [body for a in node.attribute
            for body in ([a.g] if a.HasField("g") else []) + list(a.graphs)]


def _nodes(graph: Any) -> Iterator[Any]:
    """The nodes of ``graph`` and of its subgraphs."""
    for node in graph.node:
        yield node
        for body in _bodies(node):
            yield from _nodes(body)


def _rewrite(graph: Any) -> bool:
    """Fold the pattern in ``graph`` and its subgraphs in place; True when any was."""
    changed = False
    for body in (body for node in graph.node for body in _bodies(node)):
        changed |= _rewrite(body)
    g = _Graph(graph)
    nodes = [(_match(node, g) if node.op_type == "ScatterElements" else None) or node
             for node in graph.node]
    if all(a is b for a, b in zip(nodes, graph.node)):
        return changed
    del graph.node[:]
    graph.node.extend(_live(nodes, {o.name for o in graph.output}))
    return True


def _live(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """``nodes`` without those whose outputs nothing reads (the pattern's leftovers)."""
    def reads(node: Any) -> set[str]:
        return set(node.input).union(*(inner.input for body in _bodies(node)
                                       for inner in _nodes(body)))
    while True:
        read = outputs.union(*(reads(node) for node in nodes))
        kept = [node for node in nodes if any(out in read for out in node.output)]
        if len(kept) == len(nodes):
            return kept
        nodes = kept


def fold_set_value(proto: Any) -> Any:
    """``proto`` with paddle2onnx's ``set_value`` patterns as ``SetSlice`` nodes (a copy when
    any was; else ``proto``).

    Args:
        proto: an ``onnx.ModelProto``.
    """
    from onnx import ModelProto, helper

    if not any(node.op_type == "ScatterElements" for node in _nodes(proto.graph)):
        return proto
    copy = ModelProto()
    copy.CopyFrom(proto)
    if not _rewrite(copy.graph):
        return proto
    copy.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return copy


def set_slice(n: OnnxNode) -> Any:
    """SetSlice(data, x, a, b, axis): ``data`` with the positions ``a <= p < b`` along
    ``axis`` replaced by ``x`` (one long along ``axis``, broadcast along it).

    Raises:
        CompileError: ``data`` is not fixed along ``axis``, or ``x`` is not one long there.
    """
    from . import ops_math

    data, x = n.input(0), n.input(1)
    axis = n.axis(n.attr("axis"), len(data.shape))
    size = data.shape[axis]
    if not isinstance(size, int):
        raise n.error(f"needs a fixed size along axis {axis}, got {size!r}")
    if len(x.shape) != len(data.shape) or x.shape[axis] != 1:
        raise n.error(f"the values written must be one long along axis {axis} with the rank "
                      f"of the data ({len(data.shape)}), got shape {list(x.shape)}")
    start, end = n.input(2), n.input(3)
    place = [1] * len(data.shape)
    place[axis] = size
    positions = np.arange(size, dtype=start.dtype).reshape(place)

    def op(op_type: str, *inputs: Any) -> Any:
        return ops_math.OPS[op_type](OnnxNode(n.name, op_type, list(inputs), {}, n.opset))
    inside = op("And", op("GreaterOrEqual", positions, start), op("Less", positions, end))
    return op("Where", inside, x, data)


OPS = {"SetSlice": set_slice}
"""The ops of ``DOMAIN``."""
