"""Static quantization rules: each op with an integer kernel becomes its int8 form, with
activation parameters from calibration.

- ``linear`` and ``conv2d`` with a constant weight (and ``matmul`` by a constant matrix)
  become ``qlinear`` / ``qconv2d``: the weight symmetric int8 per output channel, the bias
  folded into the int32 accumulator, a following ReLU or ReLU6 fused as the clamp of the
  requantized output; a product no integer op reads (a graph output, a softmax's input)
  leaves as float32 at once instead;
- ``matmul`` of two tensors becomes ``qmatmul``;
- ``add`` of two same-shaped tensors becomes ``qadd`` (a following ReLU fused as its lower
  clamp) and ``concat`` becomes ``qconcat``, TFLite's integer Add and Concatenation.

Any other op stays float32 between a dequantize and a quantize (``rewrite``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph, Node, Value
from ..trace import LIST_MARK
from .params import QParams, bias_int32, weight_params
from .rewrite import Rewriter

ACTIVATIONS = ("relu", "relu6")


def concat_shares_ranges(graph: Graph, params: dict[int, QParams]) -> None:
    """TFLite's rule for Concatenation: an input whose range covers the output's takes the
    output's parameters, so it is copied without a rescale; only the others are rescaled."""
    for node in graph.nodes:
        if node.op == "concat" and id(node.output) in params:
            out = params[id(node.output)]
            for value in node.inputs:
                if id(value) in params and params[id(value)].covers(out):
                    params[id(value)] = out


def _ready(rw: Rewriter, *values: Value) -> bool:
    """Whether every value is a float32 tensor with activation parameters."""
    return all(not v.is_constant and v.dtype == "float32"
               and (id(v) in rw.params or id(v) in rw.quantized_of) for v in values)


def _product(rw: Rewriter, node: Node, x: Value, weight: np.ndarray, bias: Value | None,
             op: str, weights: str) -> None:
    """``qlinear`` / ``qconv2d`` in place of ``node`` (and a ReLU/ReLU6 after it)."""
    act = rw.sole_user(node.output, ACTIVATIONS)
    chain = [node] + ([act] if act is not None else [])
    if not _ready(rw, x, chain[-1].output):
        return
    xq, xp = rw.quantized(x, node)
    wq, ws = weight_params(weight, weights)
    inputs = {"input": xq}
    inputs["input_scale"], inputs["input_zero_point"] = rw.pair(x.name, xp)
    inputs["weight"] = rw.constant(f"{node.name}_weight", wq)
    inputs["weight_scale"] = rw.constant(f"{node.name}_weight_scale", ws)
    inputs["weight_zero_point"] = rw.constant(f"{node.name}_weight_zero_point",
                                              np.zeros(ws.shape, np.int8))
    if bias is not None:
        assert bias.data is not None
        inputs["bias"] = rw.constant(f"{node.name}_bias", bias_int32(bias.data, xp.scale, ws))
    attrs = {k: v for k, v in node.attrs.items() if k != "epilogue"}
    if act is not None:
        attrs["activation"] = act.op
    _finish(rw, chain, op, inputs, attrs)


def _finish(rw: Rewriter, chain: list[Node], op: str, inputs: dict[str, Value],
            attrs: dict[str, Any]) -> None:
    """Add the integer product ``op`` in place of ``chain``: requantized to int8 when an
    integer op reads it, else dequantized to float32 by the product itself."""
    shape = chain[-1].output.shape
    if rw.read_as_float(chain[-1].output, tuple(RULES)):
        rw.replace_float(chain, rw.add_node(chain[0], op, inputs, attrs, shape, "float32"))
        return
    out = rw.params[id(chain[-1].output)]
    inputs["output_scale"], inputs["output_zero_point"] = rw.pair(chain[0].name, out)
    rw.replace(chain, rw.add_node(chain[0], op, inputs, attrs, shape, "int8"), out)


def _linear(rw: Rewriter, node: Node, weights: str) -> None:
    named = dict(zip(node.input_names, node.inputs))
    weight = named["weight"]
    if weight.data is not None and weight.dtype == "float32" and "epilogue" not in node.attrs:
        _product(rw, node, named["input"], weight.data, named.get("bias"),
                 "qlinear" if node.op == "linear" else "qconv2d", weights)


def _matmul(rw: Rewriter, node: Node, weights: str) -> None:
    a, b = node.inputs
    if b.data is not None and len(b.shape) == 2 and b.dtype == "float32":
        _product(rw, node, a, np.ascontiguousarray(b.data.T), None, "qlinear", weights)
    elif _ready(rw, a, b, node.output):
        aq, ap = rw.quantized(a, node)
        bq, bp = rw.quantized(b, node)
        inputs = {"input": aq}
        inputs["input_scale"], inputs["input_zero_point"] = rw.pair(a.name, ap)
        inputs["other"] = bq
        inputs["other_scale"], inputs["other_zero_point"] = rw.pair(b.name, bp)
        _finish(rw, [node], "qmatmul", inputs, {})


def _add(rw: Rewriter, node: Node, weights: str) -> None:
    if len(node.inputs) != 2 or node.attrs or node.inputs[0].shape != node.inputs[1].shape:
        return
    act = rw.sole_user(node.output, ("relu",))
    chain = [node] + ([act] if act is not None else [])
    if not _ready(rw, *node.inputs, chain[-1].output):
        return
    (aq, ap), (bq, bp) = (rw.quantized(v, node) for v in node.inputs)
    out = rw.params[id(chain[-1].output)]
    attrs = {"input_scale": ap.scale, "input_zero_point": ap.zero_point,
             "other_scale": bp.scale, "other_zero_point": bp.zero_point,
             "scale": out.scale, "zero_point": out.zero_point}
    if act is not None:
        attrs["low"] = out.zero_point
    q = rw.add_node(node, "qadd", {"input": aq, "other": bq}, attrs, node.output.shape, "int8")
    rw.replace(chain, q, out)


def _concat(rw: Rewriter, node: Node, weights: str) -> None:
    if not _ready(rw, *node.inputs, node.output):
        return
    parts = [rw.quantized(v, node) for v in node.inputs]
    out = rw.params[id(node.output)]
    attrs = {"scales": tuple(p.scale for _, p in parts),
             "zero_points": tuple(p.zero_point for _, p in parts),
             "scale": out.scale, "zero_point": out.zero_point, "dim": node.attrs.get("dim", 0)}
    inputs = [(f"tensors{LIST_MARK}", v) for v, _ in parts]
    rw.replace([node], rw.add_node(node, "qconcat", inputs, attrs, node.output.shape, "int8"),
               out)


RULES = {"linear": _linear, "conv2d": _linear, "matmul": _matmul, "add": _add,
         "concat": _concat}
"""The ops with an integer form, and the rule that makes it."""


def quantize_static(graph: Graph, params: dict[int, QParams], weights: str) -> Graph:
    """Rewrite every op of ``RULES`` whose tensors have parameters into its int8 form."""
    concat_shares_ranges(graph, params)
    rw = Rewriter(graph, params)
    for node in list(graph.nodes):
        if node in graph.nodes and node.op in RULES:
            RULES[node.op](rw, node, weights)
    return graph
