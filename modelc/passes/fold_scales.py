"""fold_scales: a constant scalar multiplying a matmul moves into the linear that computes
the matmul's left operand: ``matmul(f(linear(x, w, b)), k) * s`` becomes
``matmul(f(linear(x, w * s, b * s)), k)``, where ``f`` is a chain of reshapes and
permutes (which commute with scaling). Attention scales its scores by ``1 / sqrt(d)`` this
way, and the multiply is a full pass over the (heads, T, T) scores. A ``qlinear`` that
dequantizes to float32 takes the factor in its weight scale and float bias
(``float32(acc) * a_scale * w_scale * s + b * s``; an int32 bias is in ``acc``).

It applies when every value on the way has one user and is no graph output, and the linear
has constant parameters (the qlinear: a constant weight scale and bias, no activation) and no
fused epilogue yet. The result differs from the unfused one by float rounding only (the
scale meets each weight once instead of each score).
"""

from __future__ import annotations

import math

import numpy as np

from ..graph import Graph, Node, Value

PASS_THROUGH = ("reshape", "permute")
"""Ops between the linear and the matmul that commute with a scalar factor."""


def scalar_factor(node: Node) -> float | None:
    """The scalar factor of ``mul(x, s)``: a float attr or a one-element constant."""
    if node.op != "mul":
        return None
    constants = [v.data for v in node.inputs if v.data is not None]
    if len(node.inputs) == 1 and len(node.attrs) == 1:
        factor = next(iter(node.attrs.values()))
        return float(factor) if isinstance(factor, (int, float)) else None
    if len(node.inputs) == 2 and len(constants) == 1 and constants[0].size == 1:
        return float(constants[0].reshape(()))
    return None


def _single_use(graph: Graph, value: Value) -> bool:
    return len(value.users) == 1 and value not in graph.outputs.values()


def _scaled_inputs(node: Node) -> tuple[str, ...]:
    """The inputs of ``node`` (a linear or a dequantizing qlinear) that take the factor."""
    if node.op == "qlinear":
        bias = node.named_inputs().get("bias")
        floats = bias is not None and bias.dtype == "float32"
        return ("weight_scale",) + (("bias",) if floats else ())
    return tuple(n for n in node.input_names if n != "input")


def source_linear(graph: Graph, value: Value) -> Node | None:
    """The linear whose output reaches ``value`` through single-use pass-through ops."""
    producer = value.producer
    while producer is not None and producer.op in PASS_THROUGH and _single_use(graph, value):
        value = producer.inputs[0]
        producer = value.producer
    if producer is None or producer.op not in ("linear", "qlinear") \
            or not _single_use(graph, value):
        return None
    if producer.op == "qlinear" and (producer.attrs.get("output_scale") is not None
                                     or "output_scale" in producer.input_names
                                     or producer.attrs.get("activation")
                                     or producer.output.dtype != "float32"):
        return None
    scaled = _scaled_inputs(producer)
    if producer.attrs.get("epilogue") or not all(
            v.is_constant for n, v in zip(producer.input_names, producer.inputs)
            if n in scaled):
        return None
    return producer


def scale_linear(linear: Node, factor: float) -> None:
    """Multiply the parameters of ``linear`` (from ``source_linear``) by ``factor``."""
    inputs = []
    scaled = _scaled_inputs(linear)
    for name, value in zip(linear.input_names, linear.inputs):
        value.users.remove(linear)
        if name in scaled:
            assert value.data is not None
            data = (value.data * np.float32(factor)).astype(value.data.dtype)
            value = Value(f"{value.name}_scaled", value.shape, value.dtype, data=data)
        value.users.append(linear)
        inputs.append(value)
    linear.inputs = inputs


def fold_scales(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        factor = scalar_factor(node)
        source = next((v for v in node.inputs if not v.is_constant), None)
        # NOTE: 0, inf and NaN would turn weights and outputs into different NaN patterns.
        if factor is None or not math.isfinite(factor) or factor == 0.0 or source is None \
                or source.producer is None:
            continue
        matmul = source.producer
        if matmul.op != "matmul" or not _single_use(graph, source) \
                or node.output.dtype != "float32":
            continue
        linear = source_linear(graph, matmul.inputs[0])
        if linear is None:
            continue
        scale_linear(linear, factor)
        graph.replace_uses(node.output, source)
        graph.remove(node)
    return graph
