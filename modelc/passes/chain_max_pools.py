"""chain_max_pools: stride-1 max pools of one input with growing windows become a chain of
small pools, each reading the one before.

YOLO's SPP block pools one tensor with 5x5, 9x9 and 13x13 windows (padding (k - 1) / 2,
stride 1, "same" size). With padding counted as -inf, a (k + j - 1)-wide window's maximum is
the maximum over a j-wide window of k-wide maxima (the windows clipped at the border nest
the same way), so the 9x9 pool is a 5x5 pool of the 5x5 pool and the 13x13 one a 5x5 pool of
that: 15 taps per output (5 + 5 per separable pass, ``max_pool2d``) instead of 27. The
result is the same to the bit, NaN included (each window covers the same elements).

It applies to ``max_pool2d`` nodes of one input with stride 1, dilation 1, odd kernels, the
padding (k - 1) / 2 on each axis and no ceil mode, whose kernels grow on both axes in graph
order.
"""

from __future__ import annotations

from ..graph import Graph, Node
from ..ops._pool import window


def _same_size(node: Node) -> tuple[int, int] | None:
    """The kernel of a stride-1 "same" max pool, else None."""
    if node.op != "max_pool2d" or node.attrs.get("ceil_mode") or len(node.inputs) != 1:
        return None
    kernel, stride, padding, dilation = window(node.attrs)
    if stride != (1, 1) or dilation != (1, 1) \
            or any(k % 2 == 0 or p != (k - 1) // 2 for k, p in zip(kernel, padding)):
        return None
    return kernel


def chain_max_pools(graph: Graph) -> Graph:
    for value in graph.values():
        pools = [(node, _same_size(node)) for node in graph.nodes if node in value.users]
        chain = [(node, kernel) for node, kernel in pools if kernel is not None]
        for (before, small), (node, large) in zip(chain, chain[1:]):
            if large[0] < small[0] or large[1] < small[1]:
                break
            kernel = (large[0] - small[0] + 1, large[1] - small[1] + 1)
            value.users.remove(node)
            node.inputs = [before.output]
            before.output.users.append(node)
            node.attrs = {**node.attrs, "kernel_size": kernel,
                          "padding": ((kernel[0] - 1) // 2, (kernel[1] - 1) // 2)}
    return graph
