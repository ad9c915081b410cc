"""recognize_composites: turn the primitive expansion of a known composite back into one node.

Tracing records composites as their primitives (``gelu`` is five nodes). Where a kernel
computes the whole composite, that is one kernel instead of five, and it can then fuse into
a gemm epilogue. The patterns are not written here: each is obtained by tracing the
composite's own ``nn.functional`` definition on a symbolic input, so they always match what
tracing a model produces.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from ..graph import Graph, Node, Value
from ..trace import Tracer


def _gelu_as_exported(x: Any) -> Any:
    """GELU as torch's ONNX exporter writes it: ``x * (erf(x / sqrt(2)) + 1) * 0.5``, the
    divisor a float32 constant."""
    return F.mul(F.mul(x, F.add(F.erf(F.div(x, float(np.float32(math.sqrt(2.0))))), 1.0)),
                 0.5)


# Composite name -> the ways of calling it that models are traced or imported with. Each
# needs a ``modelc/ops/<name>.py``.
COMPOSITES: dict[str, tuple[Callable[[Any], Any], ...]] = {
    "gelu": (F.gelu, _gelu_as_exported),
    "silu": (F.silu,),
    "relu6": (F.relu6,),
}


@functools.cache
def pattern(name: str, form: int = 0) -> Graph:
    """The graph of formulation ``form`` of composite ``name`` traced on one symbolic input
    ``x``."""
    graph = Graph(dims={"n": (1, 1)})
    tracer = Tracer(graph)
    out = COMPOSITES[name][form](tracer.input("x", ("n",), "float32"))
    graph.outputs = {"y": out.value}
    return graph


def _same_attr(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return type(a) is type(b) and a == b


def _match(p: Value, g: Value, pat: Graph, binding: dict[str, Any]) -> bool:
    """Does graph value ``g`` compute what pattern value ``p`` computes?"""
    if p is pat.inputs["x"]:
        return binding.setdefault("x", g) is g
    if p.is_constant:
        return g.is_constant and np.array_equal(p.data, g.data)
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
    for name, forms in COMPOSITES.items():
        for form in range(len(forms)):
            pat = pattern(name, form)
            last = pat.outputs["y"]
            for node in list(graph.nodes):
                if node not in graph.nodes or node.op != last.producer.op:
                    continue
                binding: dict[str, Any] = {}
                if _match(last, node.output, pat, binding) and node.output.dtype == "float32":
                    _replace(graph, name, node, list(dict.fromkeys(binding["nodes"])),
                             binding["x"])
    return graph
