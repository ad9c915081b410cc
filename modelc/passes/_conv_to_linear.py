"""What the passes that turn a conv2d into a linear share: taking the conv out of the graph."""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Node, Value


def detach_conv(graph: Graph, node: Node) -> tuple[int, dict[str, Value], np.ndarray]:
    """Remove conv2d ``node`` (a constant weight) from ``graph``; return where it stood, its
    inputs by name and its weight as an (output channels, the rest) matrix, a linear's."""
    named = node.named_inputs()
    weight = named["weight"].data
    assert weight is not None
    position = graph.nodes.index(node)
    graph.remove(node)
    return position, named, weight.reshape(weight.shape[0], -1)
