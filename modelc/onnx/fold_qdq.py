"""Fold QDQ patterns of an ONNX graph into quantized operators before import.

onnxruntime's QDQ format keeps float ops and brackets them with QuantizeLinear /
DequantizeLinear pairs; onnxruntime fuses them when it loads the model, and so does this
rewrite, on the ONNX graph, so that the products run in integers as they do there:

- ``Conv(DQ(x), DQ(w) [, DQ(b)]) -> Q`` becomes ``QLinearConv``;
- ``MatMul(DQ(x), DQ(w)) -> Q`` becomes ``QLinearMatMul``;
- ``Gemm(DQ(x), DQ(w) [, DQ(b)]) -> Q`` (alpha 1, no transA) becomes com.microsoft ``QGemm``.

The weight (and bias) must be initializers, the product's output must feed only the
QuantizeLinear, and a bias its int32 DequantizeLinear. Every other node is left as it is
(it runs in float32 between its dequantize and quantize), as are DequantizeLinear nodes
that other consumers still read.
"""

from __future__ import annotations

from typing import Any

PRODUCTS = {"Conv": "QLinearConv", "MatMul": "QLinearMatMul", "Gemm": "QGemm"}


def _triple(node: Any) -> list[str]:
    """A DequantizeLinear's (tensor, scale, zero point) names ('' for no zero point)."""
    return list(node.input) + [""] * (3 - len(node.input))


def _fold(node: Any, producer: dict[str, Any], consumers: dict[str, list[Any]],
          constants: set[str], outputs: set[str]) -> Any | None:
    """The quantized node replacing ``node`` and the QuantizeLinear after it, or None."""
    from onnx import helper

    quantize = consumers.get(node.output[0], [])
    if node.output[0] in outputs or len(quantize) != 1 or quantize[0].op_type != \
            "QuantizeLinear" or len(node.input) < 2:
        return None
    dequantized = [producer.get(name) for name in node.input]
    if any(d is None or d.op_type != "DequantizeLinear" for d in dequantized[:2]):
        return None
    x, w = _triple(dequantized[0]), _triple(dequantized[1])
    if w[0] not in constants:
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    bias: list[str] = []
    if len(node.input) > 2 and node.input[2]:
        source = dequantized[2]
        if source is None or source.op_type != "DequantizeLinear" or source.input[0] not in \
                constants:
            return None
        bias = [source.input[0]]
    output = list(quantize[0].input[1:3]) + [""] * (3 - len(quantize[0].input))
    out = [quantize[0].output[0]]
    if node.op_type == "Conv":
        return helper.make_node("QLinearConv", x + w + output[:2] + bias, out, node.name,
                                **attrs)
    if node.op_type == "MatMul":
        return helper.make_node("QLinearMatMul", x + w + output[:2], out, node.name)
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("transA", 0) or attrs.get("beta", 1.0) != 1.0:
        return None
    return helper.make_node("QGemm", x + w + (bias or [""]) + output[:2], out, node.name,
                            domain="com.microsoft", transB=attrs.get("transB", 0))


def fold_qdq(proto: Any) -> Any:
    """``proto`` with its QDQ products folded (a copy when any was; else ``proto``).

    Args:
        proto: an ``onnx.ModelProto``.
    """
    graph = proto.graph
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    constants = {i.name for i in graph.initializer}
    outputs = {o.name for o in graph.output}
    replaced: dict[int, Any] = {}
    dropped: set[int] = set()
    for index, node in enumerate(graph.node):
        if node.op_type in PRODUCTS and node.domain in ("", "ai.onnx"):
            folded = _fold(node, producer, consumers, constants, outputs)
            if folded is not None:
                replaced[index] = folded
                dropped.add(id(consumers[node.output[0]][0]))
    if not replaced:
        return proto
    from onnx import ModelProto

    copy = ModelProto()
    copy.CopyFrom(proto)
    nodes = [replaced.get(i, node) for i, node in enumerate(graph.node)
             if id(node) not in dropped]
    del copy.graph.node[:]
    copy.graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in copy.opset_import):
        copy.opset_import.append(__import__("onnx").helper.make_opsetid("com.microsoft", 1))
    return copy
