"""phase_conv_transposes: a strided conv_transpose2d becomes one conv2d and a pixel shuffle.

A transposed conv with stride ``s`` scatters each input pixel's products ``s`` output
columns apart, which its kernel adds into the output float by float. Split by the phase
``r = (oy + pad) mod s`` of an output row, though, it is a plain correlation: output row
``s * m + r - pad`` is ``sum_a x[m - a] * w[r + s * a]`` over the ``ceil(k / s)`` taps ``a``.
All ``s * s`` phases together are one stride-1 conv2d with ``s * s * O`` output channels, a
``ceil(k / s)`` kernel (taps past ``k`` are zero) and ``ceil(k / s) - 1`` padding on every
side, that the dense conv kernels run as a gemm; a reshape, a permute and a reshape
interleave the phases, and slices crop the padding. For the usual ``k = 2 * s`` upsampling
(U-Net and ViT decoders, FCN heads) no tap is wasted.

It applies to a float32 conv_transpose2d with a constant weight, a constant bias or none,
one group, no dilation and a stride over 1, whose output the phases cover (always, except
with an ``output_padding`` past the kernel's reach).
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Node, Value
from ..ops._shapes import pair


def _taps(kernel: int, stride: int) -> int:
    return -(-kernel // stride)


def _applies(node: Node) -> bool:
    named = node.named_inputs()
    x, weight = named["input"], named["weight"]
    bias = named.get("bias")
    stride, pad = pair(node.attrs.get("stride", 1)), pair(node.attrs.get("padding", 0))
    if (weight.data is None or weight.dtype != "float32" or x.dtype != "float32"
            or len(x.shape) != 4 or node.attrs.get("groups", 1) != 1
            or pair(node.attrs.get("dilation", 1)) != (1, 1) or stride == (1, 1)
            or (bias is not None and bias.data is None)):
        return False
    size_in, size_out = x.shape[2:], node.output.shape[2:]
    return all(p + int(out) <= s * (int(size) + _taps(int(k), s) - 1) for p, out, s, size, k
               in zip(pad, size_out, stride, size_in, weight.shape[2:]))


def phase_weight(weight: np.ndarray, stride: tuple[int, int]) -> np.ndarray:
    """The conv2d weight (O * sh * sw, C, th, tw) of a transposed conv's weight (C, O, kh, kw):
    output channel ``o * sh * sw + ry * sw + rx`` is phase (ry, rx) of channel ``o``."""
    channels, filters, kh, kw = weight.shape
    (sh, sw), (th, tw) = stride, (_taps(kh, stride[0]), _taps(kw, stride[1]))
    padded = np.zeros((channels, filters, sh * th, sw * tw), np.float32)
    padded[:, :, :kh, :kw] = weight
    # tap (a, b) of phase (ry, rx) is kernel row ry + sh * a, column rx + sw * b; the conv
    # reads them in reverse, a = th - 1 - conv row
    taps = padded.reshape(channels, filters, th, sh, tw, sw)[:, :, ::-1, :, ::-1, :]
    return np.ascontiguousarray(taps.transpose(1, 3, 5, 0, 2, 4)).reshape(
        filters * sh * sw, channels, th, tw)


def _rewrite(graph: Graph, node: Node) -> None:
    named = node.named_inputs()
    x, weight = named["input"], named["weight"]
    assert weight.data is not None
    stride, pad = pair(node.attrs.get("stride", 1)), pair(node.attrs.get("padding", 0))
    (sh, sw), filters = stride, int(weight.shape[1])
    kernel = phase_weight(np.asarray(weight.data, np.float32), stride)
    th, tw = kernel.shape[2:]
    rows, cols = int(x.shape[2]) + th - 1, int(x.shape[3]) + tw - 1
    out_h, out_w = (int(size) for size in node.output.shape[2:])
    n, name = x.shape[0], node.name
    inputs = [x, Value(f"{name}_phase_w", kernel.shape, "float32", data=kernel)]
    if "bias" in named:
        assert named["bias"].data is not None
        bias = np.repeat(np.asarray(named["bias"].data, np.float32), sh * sw)
        inputs.append(Value(f"{name}_phase_b", bias.shape, "float32", data=bias))
    # (suffix, op, attrs, output shape) of each node after the conv
    steps: list[tuple[str, str, dict, tuple]] = [
        ("split", "reshape", {"shape": (-1, filters, sh, sw, rows, cols)},
         (n, filters, sh, sw, rows, cols)),
        ("interleave", "permute", {"dims": (0, 1, 4, 2, 5, 3)},
         (n, filters, rows, sh, cols, sw)),
        ("merge", "reshape", {"shape": (-1, filters, sh * rows, sw * cols)},
         (n, filters, sh * rows, sw * cols))]
    if (pad[0], out_h) != (0, sh * rows):
        steps.append(("rows", "slice", {"dim": 2, "start": pad[0], "end": pad[0] + out_h},
                      (n, filters, out_h, sw * cols)))
    if (pad[1], out_w) != (0, sw * cols):
        steps.append(("cols", "slice", {"dim": 3, "start": pad[1], "end": pad[1] + out_w},
                      (n, filters, out_h, out_w)))
    position = graph.nodes.index(node)
    graph.remove(node)
    phases = Value(f"{name}_phases", (n, filters * sh * sw, rows, cols), "float32")
    previous = graph.insert(position, f"{name}_phases", "conv2d", inputs,
                            ("input", "weight", "bias")[:len(inputs)],
                            {"stride": 1, "padding": (th - 1, tw - 1)}, node.meta, phases)
    for index, (suffix, op, attrs, shape) in enumerate(steps, 1):
        last = index == len(steps)
        output = node.output if last else Value(f"{name}_{suffix}", shape, "float32")
        previous = graph.insert(position + index, name if last else f"{name}_{suffix}", op,
                                [previous], ("input",), attrs, node.meta, output)


def phase_conv_transposes(graph: Graph) -> Graph:
    for node in [n for n in graph.nodes if n.op == "conv_transpose2d"]:
        if _applies(node):
            _rewrite(graph, node)
    return graph
