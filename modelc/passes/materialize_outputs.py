"""materialize_outputs: a graph output that is a constant (an ONNX output computed from
constants and fixed shapes at import, such as a ``ConstantOfShape``) is copied into the
arena by a ``cast`` to its own dtype, so that like every output it has a slot the caller
reads it from."""

from __future__ import annotations

from ..graph import Graph, Value


def materialize_outputs(graph: Graph) -> Graph:
    for name, value in list(graph.outputs.items()):
        if not value.is_constant:
            continue
        copied = Value(f"{name}_copy", value.shape, value.dtype)
        graph.insert(len(graph.nodes), f"materialize_{name}", "cast", [value], ("input",),
                     {"dtype": value.dtype}, {}, copied)
        graph.outputs[name] = copied
    return graph
