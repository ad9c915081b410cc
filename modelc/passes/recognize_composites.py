"""recognize_composites: turn the primitive expansion of a known composite back into one node.

Tracing records composites as their primitives (``gelu`` is five nodes). Where a kernel
computes the whole composite, that is one kernel instead of five, and it can then fuse into
a gemm epilogue. The patterns are not written here: each is obtained by tracing the
formulations an op file lists in ``OpDef.composite_forms`` (its own ``nn.functional``
definition first) on a symbolic input, so they always match what tracing a model produces.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ops
from ..graph import Graph, Node, Value
from ..trace import Tracer


@functools.cache
def composites() -> dict[str, tuple[Callable[[Any], Any], ...]]:
    """Composite name -> the ways of calling it that models are traced or imported with:
    every op whose ``OpDef.composite_forms`` lists some. Larger patterns come first, so a
    composite that contains another (hardswish holds relu6) is matched whole."""
    forms = {op: ops.get(op).composite_forms for op in ops.available()}
    found = {op: f for op, f in forms.items() if f}
    return dict(sorted(found.items(), key=lambda item: -len(_trace(item[1][0]).nodes)))


def _trace(fn: Callable[[Any], Any]) -> Graph:
    graph = Graph(dims={"n": (1, 1)})
    tracer = Tracer(graph)
    graph.outputs = {"y": fn(tracer.input("x", ("n",), "float32")).value}
    return graph


@functools.cache
def pattern(name: str, form: int = 0) -> Graph:
    """The graph of formulation ``form`` of composite ``name`` traced on one symbolic input
    ``x``."""
    return _trace(composites()[name][form])


def _same_attr(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return type(a) is type(b) and a == b


def _match(p: Value, g: Value, pat: Graph, binding: dict[str, Any]) -> bool:
    """Does graph value ``g`` compute what pattern value ``p`` computes?"""
    if p is pat.inputs["x"]:
        return binding.setdefault("x", g) is g
    if p.data is not None:
        return g.data is not None and np.array_equal(p.data, g.data)
    pn, gn = p.producer, g.producer
    if pn is None or gn is None or pn.op != gn.op or len(pn.inputs) != len(gn.inputs):
        return False
    if pn.input_names != gn.input_names or pn.attrs.keys() != gn.attrs.keys():
        return False
    if not all(_same_attr(pn.attrs[k], gn.attrs[k]) for k in pn.attrs):
        return False
    binding.setdefault("nodes", []).append(gn)
    return all(_match(pi, gi, pat, binding) for pi, gi in zip(pn.inputs, gn.inputs))


def _replace(graph: Graph, name: str, root: Node, matched: list[Node], x: Value) -> None:
    inner = {id(v) for n in matched for v in n.outputs if n is not root}
    for node in matched:
        for value in node.outputs:
            if id(value) in inner and (value in graph.outputs.values()
                                       or any(u not in matched for u in value.users)):
                return  # an intermediate is used elsewhere: keep the expansion
    position = graph.nodes.index(min(matched, key=graph.nodes.index))
    for node in matched:
        for value in node.inputs:
            if node in value.users:
                value.users.remove(node)
        graph.nodes.remove(node)
    fused = Node(root.name, name, [x], ("input",), {}, meta=root.meta)
    fused.outputs = [root.output]
    root.output.producer = fused
    x.users.append(fused)
    graph.nodes.insert(position, fused)


def recognize_composites(graph: Graph) -> Graph:
    for name, forms in composites().items():
        for form in range(len(forms)):
            pat = pattern(name, form)
            last = pat.outputs["y"]
            root = last.producer
            assert root is not None  # a traced composite ends in a node
            for node in list(graph.nodes):
                if node not in graph.nodes or node.op != root.op:
                    continue
                binding: dict[str, Any] = {}
                if _match(last, node.output, pat, binding) and node.output.dtype == "float32":
                    _replace(graph, name, node, list(dict.fromkeys(binding["nodes"])),
                             binding["x"])
    return graph
