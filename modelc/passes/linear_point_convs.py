"""linear_point_convs: a conv2d whose input plane is a single pixel becomes a linear.

After global pooling, classifier heads and squeeze-and-excitation blocks run 1x1 convs on
(N, C, 1, 1) tensors: a matrix-vector product, which the conv kernels run one output
pixel at a time through tiles built for planes (PP-LCNet's 512 -> 1280 head: 3.2 GFLOPS,
0.4 ms for 2.6 MB of weights). As ``linear(reshape(x, (N, C)), w (O, C), b)``, reshaped
back to (N, O, 1, 1), the weights stream through the gemm tile once.

It applies to a conv2d with a constant weight, a 1x1 kernel, no padding and no groups, an
input plane of 1x1 (any stride then reads the one pixel) and no epilogue yet. An
activation after it then runs on its own, behind the reshape (on ``N * O`` values).
"""

from __future__ import annotations

from nn.functional.conv import conv_padding

from ..graph import Graph, Node, Value
from ..ops._shapes import pair
from ._conv_to_linear import detach_conv


def _applies(node: Node) -> bool:
    named = node.named_inputs()
    x, weight = named["input"], named["weight"]
    pads = conv_padding(node.attrs.get("padding", 0), (1, 1), pair(node.attrs.get("stride", 1)),
                        pair(node.attrs.get("dilation", 1)))
    return (weight.data is not None and weight.dtype == "float32" and x.dtype == "float32"
            and len(x.shape) == 4 and tuple(x.shape[2:]) == (1, 1)
            and tuple(weight.shape[2:]) == (1, 1) and node.attrs.get("groups", 1) == 1
            and pads == ((0, 0), (0, 0)) and not node.attrs.get("epilogue")
            and ("bias" not in named or named["bias"].data is not None))


def _rewrite(graph: Graph, node: Node) -> None:
    position, named, matrix = detach_conv(graph, node)
    x = named["input"]
    n, filters = x.shape[0], matrix.shape[0]
    vector = Value(f"{node.name}_vector", (n, x.shape[1]), "float32")  # (N, C)
    graph.insert(position, f"{node.name}_vector", "reshape", [x], ("input",),
                 {"shape": (-1, x.shape[1])}, node.meta, vector)
    inputs = [vector, Value(f"{node.name}_matrix", matrix.shape, "float32", data=matrix)]
    if "bias" in named:
        inputs.append(named["bias"])
    product = Value(f"{node.name}_linear", (n, filters), "float32")  # (N, O)
    graph.insert(position + 1, f"{node.name}_linear", "linear", inputs,
                 ("input", "weight", "bias")[:len(inputs)], {}, node.meta, product)
    graph.insert(position + 2, node.name, "reshape", [product], ("input",),
                 {"shape": (-1, filters, 1, 1)}, node.meta, node.output)  # (N, O, 1, 1)


def linear_point_convs(graph: Graph) -> Graph:
    for node in [n for n in graph.nodes if n.op == "conv2d"]:
        if _applies(node):
            _rewrite(graph, node)
    return graph
