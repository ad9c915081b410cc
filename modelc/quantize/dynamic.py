"""Dynamic quantization (transformers): weights become int8 when the model is compiled;
each activation entering a ``linear`` (or a ``matmul`` by a constant matrix) is quantized
to uint8 at run time over its own range (``dynamic_quantize_linear``), and the int32
accumulator leaves dequantized to float32, bias and a ReLU/ReLU6 applied there. An
``embedding``'s constant table becomes int8 too, symmetric per column, its gathered rows
dequantized. Everything else stays float32, so no calibration is needed."""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Node, Value
from .params import weight_params
from .rewrite import Rewriter
from .static import ACTIVATIONS


def _dynamic_input(rw: Rewriter, x: Value, before: Node,
                   made: dict[int, tuple[Value, ...]]) -> tuple[Value, ...]:
    """``(q, scale, zero_point)`` of ``x`` quantized at run time, once per tensor."""
    if id(x) not in made:
        name = rw.fresh("dynamic_quantize_linear")
        outputs = [Value(f"{name}_{part}", shape, dtype) for part, shape, dtype in
                   (("q", x.shape, "uint8"), ("scale", (), "float32"),
                    ("zero_point", (), "uint8"))]
        node = Node(name, "dynamic_quantize_linear", [x], ("input",), {},
                    meta=dict(before.meta))
        node.outputs = outputs
        for value in outputs:
            value.producer = node
        x.users.append(node)
        rw.graph.nodes.insert(rw.graph.nodes.index(before), node)
        made[id(x)] = tuple(outputs)
    return made[id(x)]


def _embedding(rw: Rewriter, node: Node) -> None:
    """A constant float32 table (rows a multiple of 4 bytes wide, as the byte gather needs) as
    int8 with one scale per column: a feature's range is its own across the vocabulary,
    where one scale per row would be set by each token's largest feature."""
    named = dict(zip(node.input_names, node.inputs))
    table = named["weight"].data
    if table is None or table.dtype != np.float32 or table.shape[1] % 4 or node.attrs:
        return
    wq, ws = weight_params(table.T, "per_channel")
    gathered = rw.add_node(node, "embedding", {
        "input": named["input"],
        "weight": rw.constant(f"{node.name}_weight", np.ascontiguousarray(wq.T))},
        {}, node.output.shape, "int8")
    real = rw.add_node(node, "dequantize_linear", {
        "input": gathered, "scale": rw.constant(f"{node.name}_weight_scale", ws),
        "zero_point": rw.constant(f"{node.name}_weight_zero_point",
                                  np.zeros(ws.shape, np.int8))},
        {"axis": -1}, node.output.shape, "float32")
    rw.replace_float([node], real)


def quantize_dynamic(graph: Graph, weights: str) -> Graph:
    """Rewrite every float ``linear`` with a constant weight (and ``matmul`` by a constant
    2-D matrix) into a ``qlinear`` fed by a run-time quantization of its input, and every
    ``embedding`` of a constant float32 table into a gather of an int8 one."""
    rw = Rewriter(graph, {})
    made: dict[int, tuple[Value, ...]] = {}
    for node in list(graph.nodes):
        named = dict(zip(node.input_names, node.inputs))
        if node.op == "embedding":
            _embedding(rw, node)
            continue
        if node.op == "linear" and not node.attrs:
            x, weight, bias = named["input"], named["weight"].data, named.get("bias")
        elif node.op == "matmul" and named["other"].data is not None \
                and len(named["other"].shape) == 2:
            x, weight, bias = named["input"], named["other"].data.T, None
        else:
            continue
        if weight is None or x.dtype != "float32" or x.is_constant:
            continue
        act = rw.sole_user(node.output, ACTIVATIONS)
        chain = [node] + ([act] if act is not None else [])
        q, scale, zero_point = _dynamic_input(rw, x, node, made)
        wq, ws = weight_params(weight, weights)
        inputs = {"input": q, "input_scale": scale, "input_zero_point": zero_point,
                  "weight": rw.constant(f"{node.name}_weight", wq),
                  "weight_scale": rw.constant(f"{node.name}_weight_scale", ws),
                  "weight_zero_point": rw.constant(f"{node.name}_weight_zero_point",
                                                   np.zeros(ws.shape, np.int8))}
        if bias is not None:
            inputs["bias"] = bias
        attrs = {"activation": act.op} if act is not None else {}
        real = rw.add_node(node, "qlinear", inputs, attrs, chain[-1].output.shape, "float32")
        graph.replace_uses(chain[-1].output, real)
        for old in reversed(chain):
            graph.remove(old)
    return graph
