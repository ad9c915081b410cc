"""fold_linear_bias: ``add(linear(x, w), b)`` with a constant ``b`` along the output features
becomes ``linear(x, w, b)``. ONNX exports write a ``Linear`` as ``MatMul`` then ``Add``, so
without this each projection costs a second pass over its output, and the residual add and
activation after it cannot fuse into the gemm (``fuse_epilogues`` wants the linear itself).

It applies when the linear has no bias yet, its output feeds only the add and is no graph
output, and ``b`` is float32 of shape (n,) or (1, ..., 1, n) no longer than the output.
"""

from __future__ import annotations

from ..graph import Graph, Node, Value


def _bias(graph: Graph, node: Node) -> tuple[Node, Value] | None:
    """The bias-less linear and the constant row that ``node`` adds to it, if it does."""
    if node.op != "add" or len(node.inputs) != 2 or node.attrs:
        return None
    for source, bias in (node.inputs, node.inputs[::-1]):
        linear = source.producer
        if (linear is None or linear.op != "linear" or "bias" in linear.input_names
                or linear.attrs.get("bias") is not None or linear.attrs.get("epilogue")
                or len(source.users) != 1 or source in graph.outputs.values()):
            continue
        n = source.shape[-1]
        if (bias.is_constant and bias.dtype == "float32" and len(bias.shape) <= len(source.shape)
                and bias.shape[-1:] == (n,) and all(d == 1 for d in bias.shape[:-1])):
            return linear, bias
    return None


def fold_linear_bias(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        found = _bias(graph, node)
        if found is None:
            continue
        linear, bias = found
        assert bias.data is not None
        row = Value(f"{bias.name}_row", (linear.output.shape[-1],), "float32",
                    data=bias.data.reshape(-1))
        linear.inputs.append(row)
        linear.input_names += ("bias",)
        linear.attrs.pop("bias", None)
        row.users.append(linear)
        graph.replace_uses(node.output, linear.output)
        graph.remove(node)
    return graph
