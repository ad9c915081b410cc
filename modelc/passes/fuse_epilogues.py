"""fuse_epilogues: fold elementwise work into the epilogue of the op that produces its input.

Rules, in the order a gemm epilogue applies them:
- residual: ``y = add(p(...), r)`` (either operand order) becomes ``y = p(..., residual=r,
  epilogue=("add",))`` when ``p`` accepts ``add``, has no epilogue yet, ``p``'s output has
  ``y``'s shape, ``r`` has a shape ``p`` lowers (``OpDef.accepts_residual``: ``y``'s own, or
  for ``matmul`` a row broadcast over the matrix rows, as an attention mask) and is computed
  before ``p`` runs;
- activation: ``y = f(p(...))`` becomes ``y = p(..., epilogue=(..., f))`` when ``f`` is in
  ``p``'s ``OpDef.epilogues`` and ``p`` has no activation yet; ``y = f(reshape(p(...)))``
  becomes ``y = reshape(p(..., epilogue=(..., f)))`` the same way (an elementwise ``f``
  commutes with a reshape), when the reshape's output has no other user.
Either way ``p``'s output must have no other user and not be a graph output.
"""

from __future__ import annotations

from .. import ops
from ..graph import Graph, Node, Value


def _fusable(graph: Graph, source: Value, op: str) -> Node | None:
    producer = source.producer
    if (producer is None or len(producer.outputs) != 1 or len(source.users) != 1
            or source in graph.outputs.values() or op not in ops.get(producer.op).epilogues):
        return None
    return producer


def _absorb(producer: Node, node: Node, step: str) -> None:
    producer.attrs["epilogue"] = tuple(producer.attrs.get("epilogue", ())) + (step,)
    producer.outputs = [node.output]
    node.output.producer = producer


def _fuse_activation(graph: Graph, node: Node) -> bool:
    if len(node.inputs) != 1 or node.attrs:
        return False
    source, reshape = node.inputs[0], node.inputs[0].producer
    if reshape is not None and reshape.op == "reshape" and len(source.users) == 1 \
            and source not in graph.outputs.values():
        source = reshape.inputs[0]  # f(reshape(v)) is reshape(f(v)) for an elementwise f
    else:
        reshape = None
    producer = _fusable(graph, source, node.op)
    if producer is None or any(e != "add" for e in producer.attrs.get("epilogue", ())):
        return False
    node.inputs[0].users.remove(node)
    if reshape is None:
        _absorb(producer, node, node.op)
        return True
    producer.attrs["epilogue"] = tuple(producer.attrs.get("epilogue", ())) + (node.op,)
    reshape.outputs = [node.output]
    node.output.producer = reshape
    return True


def _fuse_residual(graph: Graph, node: Node) -> bool:
    if node.op != "add" or len(node.inputs) != 2 or node.attrs:
        return False
    for source, residual in (node.inputs, node.inputs[::-1]):
        producer = _fusable(graph, source, "add")
        if (producer is None or producer.attrs.get("epilogue")
                or source.shape != node.output.shape or residual.dtype != "float32"
                or not ops.get(producer.op).accepts_residual(residual.shape, source.shape)
                or residual.producer is not None
                and graph.nodes.index(residual.producer) > graph.nodes.index(producer)):
            continue
        for value in node.inputs:
            value.users.remove(node)
        producer.inputs.append(residual)
        producer.input_names += ("residual",)
        residual.users.append(producer)
        _absorb(producer, node, "add")
        return True
    return False


def fuse_epilogues(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        if _fuse_residual(graph, node) or _fuse_activation(graph, node):
            graph.nodes.remove(node)
    return graph
