"""fold_batchnorm: merge an inference ``batch_norm`` into the conv2d or linear before it.

``bn(conv(x, w, b))`` = ``conv(x, w * s, (b - mean) * s + beta)`` per output channel, with
``s = gamma / sqrt(var + eps)``. It applies when the producer's weight (and bias) and all
batch-norm parameters are constants, the producer's output feeds only the batch norm, and
the channel axis is the producer's output axis 1 (conv2d, or linear with 2-D output).
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Node, Value

PRODUCERS = ("conv2d", "linear")


def _parameters(node: Node) -> dict[str, np.ndarray] | None:
    named = node.named_inputs()
    if any(not v.is_constant for n, v in named.items() if n != "input"):
        return None
    if named.get("running_mean") is None or named.get("running_var") is None:
        return None
    return {n: v.data for n, v in named.items() if n != "input" and v.data is not None}


def _fold(graph: Graph, producer: Node, bn: Node, params: dict[str, np.ndarray]) -> None:
    channels = params["running_mean"].shape[0]
    ones, zeros = np.ones(channels, np.float32), np.zeros(channels, np.float32)
    scale = params.get("weight", ones) / np.sqrt(params["running_var"] + bn.attrs["eps"])
    named = producer.named_inputs()
    weight = named["weight"].data
    assert weight is not None  # producers fold only with a constant weight
    bias = named["bias"].data if "bias" in named else zeros
    new_weight = (weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1))).astype(np.float32)
    new_bias = ((bias - params["running_mean"]) * scale + params.get("bias", zeros)
                ).astype(np.float32)
    for value in producer.inputs:
        value.users.remove(producer)
    x = named["input"]
    producer.inputs = [x,
                       Value(f"{producer.name}_weight_bn", new_weight.shape, "float32",
                             data=new_weight),
                       Value(f"{producer.name}_bias_bn", new_bias.shape, "float32",
                             data=new_bias)]
    producer.input_names = ("input", "weight", "bias")
    producer.attrs.pop("bias", None)
    for value in producer.inputs:
        value.users.append(producer)
    graph.replace_uses(bn.output, producer.output)
    graph.remove(bn)


def fold_batchnorm(graph: Graph) -> Graph:
    for bn in [n for n in graph.nodes if n.op == "batch_norm"]:
        source = bn.inputs[0]
        producer = source.producer
        if (producer is None or producer.op not in PRODUCERS or len(source.users) != 1
                or bn.attrs.get("training") or source in graph.outputs.values()):
            continue
        if producer.op == "linear" and len(source.shape) != 2:
            continue
        named = producer.named_inputs()
        params = _parameters(bn)
        if params is None or not all(v.is_constant for n, v in named.items() if n != "input"):
            continue
        _fold(graph, producer, bn, params)
    return graph
