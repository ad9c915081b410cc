"""fold_dequantize_scales: onnxruntime's dynamically quantized linear layer, ``MatMulInteger
-> Cast -> Mul(x_scale * w_scale) -> Add(bias)``, imported as ``qlinear`` with unit scales
then ``mul`` and ``add``, becomes one ``qlinear`` that dequantizes with those scales and adds
the bias in its kernel's epilogue: three passes over the output fewer, and the same float32
operations in the same order (``float32(acc) * (x_scale * w_scale) + bias``).

It applies when the unit-scale qlinear (no bias, no output quantization, no activation)
feeds only a ``mul`` by ``mul(x_scale, c)``, ``x_scale`` 0-d and ``c`` a constant (a number, 0-d, or
one per output feature); a following ``add`` of a constant float32 row of the output's
width becomes its bias, and a ``relu`` or ``relu6`` after that its activation.
"""

from __future__ import annotations

import numpy as np

from nn.functional.quantized import ACTIVATIONS

from ..graph import Graph, Node, Value


def _only_user(graph: Graph, value: Value, op: str) -> Node | None:
    if len(value.users) != 1 or value in graph.outputs.values() or value.users[0].op != op:
        return None
    return value.users[0]


def _unit(value: Value) -> bool:
    return value.data is not None and value.shape == () and float(value.data) == 1.0


def _scales(mul: Node, product: Value, width: int) -> tuple[Value, np.ndarray] | None:
    """``(x_scale, c)`` when ``mul`` multiplies ``product`` by ``mul(x_scale, c)``."""
    others = [v for v in mul.inputs if v is not product]
    if len(others) != 1 or mul.attrs or others[0].shape not in ((), (width,)) or \
            others[0].producer is None:
        return None
    scale = others[0].producer
    if scale.op != "mul" or len(others[0].users) != 1:
        return None
    runtime = [v for v in scale.inputs if v.data is None]
    constant = [np.asarray(v.data) for v in scale.inputs if v.data is not None]
    if "other" in scale.attrs:
        constant.append(np.asarray(scale.attrs["other"], np.float32))
    if len(runtime) != 1 or len(constant) != 1 or runtime[0].shape != () or \
            runtime[0].dtype != "float32" or constant[0].shape not in ((), (width,)):
        return None
    return runtime[0], constant[0].astype(np.float32)


def _bias(graph: Graph, value: Value, width: int) -> tuple[Node, Value] | None:
    add = _only_user(graph, value, "add")
    if add is None or add.attrs or len(add.inputs) != 2:
        return None
    bias = add.inputs[1] if add.inputs[0] is value else add.inputs[0]
    if bias.data is None or bias.dtype != "float32" or bias.data.size != width or \
            bias.shape[-1:] != (width,):
        return None
    return add, bias


def _rewrite(graph: Graph, node: Node) -> None:
    named = node.named_inputs()
    width = node.output.shape[-1]
    if not (set(named) == {"input", "input_scale", "input_zero_point", "weight",
                           "weight_scale", "weight_zero_point"}
            and node.attrs.get("bias") is None and node.attrs.get("output_scale") is None
            and _unit(named["input_scale"]) and _unit(named["weight_scale"])
            and not node.attrs.get("activation") and isinstance(width, int)):
        return
    mul = _only_user(graph, node.output, "mul")
    found = _scales(mul, node.output, width) if mul is not None else None
    if mul is None or found is None:
        return
    x_scale, constant = found
    w_scale = Value(f"{node.name}_weight_scale", constant.shape, "float32", data=constant)
    named.update(input_scale=x_scale, weight_scale=w_scale)
    last = mul
    bias = _bias(graph, mul.output, width)
    if bias is not None:
        last, row = bias
        assert row.data is not None  # NOTE: _bias only matches a constant row
        named["bias"] = Value(f"{row.name}_row", (width,), "float32", data=row.data.reshape(-1))
        node.attrs.pop("bias", None)
    activation = next((op for op in ACTIVATIONS if op
                       and (user := _only_user(graph, last.output, op)) is not None
                       and not user.attrs), "")
    dead = [mul] if last is mul else [last, mul]
    if activation:
        dead.insert(0, last.output.users[0])
        node.attrs["activation"] = activation
    for value in node.inputs:
        value.users.remove(node)
    node.input_names = tuple(named)
    node.inputs = list(named.values())
    for value in node.inputs:
        value.users.append(node)
    graph.replace_uses(dead[0].output, node.output)
    scale = mul.inputs[1] if mul.inputs[0] is node.output else mul.inputs[0]
    for gone in dead:
        graph.remove(gone)
    if not scale.users and scale.producer is not None:
        graph.remove(scale.producer)


def fold_dequantize_scales(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        if node.op == "qlinear" and node in graph.nodes:
            _rewrite(graph, node)
    return graph
