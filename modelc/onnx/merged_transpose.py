"""onnxscript's ``scaled_dot_product_attention`` (torch's dynamo exporter) transposes the
keys through a view that merges the batch and head axes:

    Reshape(Transpose(Reshape(k, [-1, L, E]), perm=[0, 2, 1]), concat(shape(k)[:-2], E, L))

Over a symbolic batch the merged axis has no name (the IR has no products of dims), so
``fold_merged_transposes`` rewrites each such chain of the main graph (whose first two
results nothing else reads) into one ``SwapLastAxes(k, first_shape, last_shape)`` node of
the importer's own domain, and ``swap_last_axes`` imports it as one transpose of ``k``'s
last two axes when the two shapes are those; else as the chain's three steps.
"""

from __future__ import annotations

from typing import Any

from nn import functional as F

from .fold import dims, product
from .node import OnnxNode
from .set_value import DOMAIN, _nodes


def _single_reader(name: str, readers: dict[str, list[Any]], outputs: set[str]) -> Any:
    found = readers.get(name, [])
    return found[0] if len(found) == 1 and name not in outputs else None


def _match(transpose: Any, producer: dict[str, Any], readers: dict[str, list[Any]],
           outputs: set[str]) -> tuple[Any, Any] | None:
    """The Reshape before and after ``transpose`` when they form the chain, else None."""
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in transpose.attribute}
    first = producer.get(transpose.input[0])
    if list(attrs.get("perm", [])) != [0, 2, 1] or first is None or first.op_type != "Reshape":
        return None
    last = _single_reader(transpose.output[0], readers, outputs)
    if (last is None or last.op_type != "Reshape" or last.input[0] != transpose.output[0]
            or _single_reader(first.output[0], readers, outputs) is not transpose):
        return None
    if any(a.name == "allowzero" and a.i for node in (first, last) for a in node.attribute):
        return None
    return first, last


def fold_merged_transposes(proto: Any) -> Any:
    """``proto`` with each chain as a ``SwapLastAxes`` node (a copy when any was; else
    ``proto``).

    Args:
        proto: an ``onnx.ModelProto``.
    """
    from onnx import ModelProto, helper

    graph = proto.graph
    producer = {out: node for node in graph.node for out in node.output}
    readers: dict[str, list[Any]] = {}
    for node in _nodes(graph):
        for name in set(node.input):
            readers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    chains = {id(t): m for t in graph.node if t.op_type == "Transpose"
              and (m := _match(t, producer, readers, outputs)) is not None}
    if not chains:
        return proto
    dropped = {id(first) for first, _ in chains.values()} | set(chains)
    fused = {id(last): helper.make_node("SwapLastAxes", [first.input[0], first.input[1],
                                                         last.input[1]],
                                        list(last.output), last.name, domain=DOMAIN)
             for first, last in chains.values()}
    copy = ModelProto()
    copy.CopyFrom(proto)
    del copy.graph.node[:]
    copy.graph.node.extend(fused.get(id(node), node) for node in graph.node
                           if id(node) not in dropped)
    if DOMAIN not in {o.domain for o in copy.opset_import}:
        copy.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return copy


def swap_last_axes(n: OnnxNode) -> Any:
    """SwapLastAxes(x, first, last): ``Reshape(Transpose(Reshape(x, first), [0, 2, 1]),
    last)``, one transpose of the last two axes when ``first`` merges the leading ones and
    ``last`` splits them back."""
    x = n.input(0)
    shape = list(x.shape)
    first = [shape[i] if d == 0 else d for i, d in enumerate(dims(n.known(1, "first shape")))]
    last = dims(n.known(2, "last shape"))
    if (len(shape) > 3 and first[1:] == shape[-2:] and first[0] in (-1, product(shape[:-2]))
            and last == [*shape[:-2], shape[-1], shape[-2]]):
        return F.permute(x, [*range(len(shape) - 2), len(shape) - 1, len(shape) - 2])
    merged = F.permute(F.reshape(x, tuple(first)), (0, 2, 1))
    return F.reshape(merged, tuple(merged.shape[i] if d == 0 else d
                                   for i, d in enumerate(last)))


OPS = {"SwapLastAxes": swap_last_axes}
"""The ops of the rewrite, in ``DOMAIN``."""
