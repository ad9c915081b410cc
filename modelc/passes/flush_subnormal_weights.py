"""flush_subnormal_weights: subnormal float32 weights and biases of the gemm ops become zero.

x86 cores take a microcode assist for every multiply with a subnormal operand (wasm has no
flush-to-zero mode), about a hundred times the cost of a normal one. Trained weights can
hold many: PP-OCRv6's det head has two 768 -> 384 pointwise convs whose weights are 24% and
63% subnormal (below 1.2e-38), which made those two convs 130 of the model's 180 ms. Their
products are below 1e-35 for any activation under 1e3, far under float32's resolution of
any sum they join, so zero computes the same result.

It rewrites the constant ``weight`` and ``bias`` inputs of conv2d, conv_transpose2d and
linear. A constant shared with another node gets a flushed copy for these inputs only.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Value

OPS = ("conv2d", "conv_transpose2d", "linear")
_TINY = np.finfo(np.float32).tiny


def flushed(data: np.ndarray) -> np.ndarray | None:
    """``data`` with its subnormal values set to zero, or None when it has none."""
    magnitude = np.abs(data)
    subnormal = (magnitude > 0) & (magnitude < _TINY)
    if not subnormal.any():
        return None
    return np.where(subnormal, np.float32(0), data).astype(np.float32)


def flush_subnormal_weights(graph: Graph) -> Graph:
    for node in [n for n in graph.nodes if n.op in OPS]:
        for index, (name, value) in enumerate(zip(node.input_names, node.inputs)):
            if name not in ("weight", "bias") or value.data is None \
                    or value.dtype != "float32":
                continue
            data = flushed(np.asarray(value.data))
            if data is None:
                continue
            value.users.remove(node)
            replacement = Value(f"{value.name}_flushed", value.shape, "float32", data=data)
            replacement.users.append(node)
            node.inputs[index] = replacement
    return graph
