"""infer_shapes: recompute every node's output shapes and dtypes from its OpDef rule."""

from __future__ import annotations

from .. import ops
from ..errors import CompileError
from ..graph import Graph


def infer_shapes(graph: Graph) -> Graph:
    """Set each output's shape and dtype from ``OpDef.infer``, in node order.

    Raises:
        CompileError: a node's inputs do not fit its op, naming the node and its source line.
    """
    for node in graph.nodes:
        try:
            results = ops.get(node.op).infer([v.shape for v in node.inputs],
                                             [v.dtype for v in node.inputs], node.attrs)
        except CompileError as err:
            raise CompileError(f"while inferring shapes of {node.describe()}: {err}") from None
        if len(results) != len(node.outputs):
            raise CompileError(f"{node.describe()}: op {node.op!r} gives {len(results)} outputs, "
                               f"the node has {len(node.outputs)}")
        for value, (shape, dtype) in zip(node.outputs, results):
            value.shape, value.dtype = tuple(shape), dtype
    return graph
