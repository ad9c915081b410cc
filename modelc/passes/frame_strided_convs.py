"""frame_strided_convs: a 1-D conv of one input channel with a long stride becomes frames
and one linear.

A short-time Fourier transform written as a conv (Silero VAD: 258 filters of 256 taps at
stride 128 over one audio channel) has few output pixels per image and one input channel:
the conv kernels tile output pixels, so most of each tile is empty (3.5 GFLOPS measured).
The same product as a gemm has ``batch * frames`` rows, ``taps`` steps and ``filters``
columns. The frames come from ``m = ceil(taps / stride)`` slices of the signal, each
reshaped into rows of ``stride`` samples, concatenated side by side (and cut to ``taps``):

    conv2d(x (N, 1, 1, W), w (O, 1, 1, K), stride (1, S))
      = reshape(permute(linear(frames (N, OW, K), w (O, K)), (0, 2, 1)), (N, O, 1, OW))

It applies to a conv2d with constant weight, no padding, dilation or groups, an input of
height 1 and one channel, a (1, K) kernel with stride S >= 2 and ``ceil(K / S) <= 8``.
Where the last slice would run past the signal's end, zeros pad it (they land only in
columns past ``K``, which are cut off). The result is the same sums in another order.
"""

from __future__ import annotations

from typing import Any

from nn.functional.conv import conv_padding

from ..graph import Graph, Node, Value
from ..ops._shapes import pair
from ._conv_to_linear import detach_conv

MAX_SLICES = 8
"""At most this many slices per frame (copies of the signal), so the frames stay small."""


def _geometry(node: Node) -> tuple[int, int, int, int] | None:
    """``(W, K, S, OW)`` of a conv this pass rewrites, else None."""
    named = node.named_inputs()
    x, weight = named["input"], named["weight"]
    if (weight.data is None or weight.dtype != "float32" or x.dtype != "float32"
            or node.attrs.get("epilogue") or node.attrs.get("groups", 1) != 1
            or len(x.shape) != 4 or x.shape[1:3] != (1, 1) or weight.shape[1:3] != (1, 1)
            or "bias" in named and named["bias"].data is None):
        return None
    k, (sh, s) = weight.data.shape[3], pair(node.attrs.get("stride", 1))
    pads = conv_padding(node.attrs.get("padding", 0), (1, k), (sh, s),
                        pair(node.attrs.get("dilation", 1)))
    width, out = x.shape[3], node.output.shape[3]
    if (pair(node.attrs.get("dilation", 1)) != (1, 1) or pads != ((0, 0), (0, 0)) or s < 2
            or not isinstance(width, int) or not isinstance(out, int)):
        return None
    if -(-k // s) > MAX_SLICES:
        return None
    return width, k, s, out


def _rewrite(graph: Graph, node: Node, width: int, k: int, s: int, out: int) -> None:
    position, named, matrix = detach_conv(graph, node)
    x = named["input"]
    n, filters = x.shape[0], matrix.shape[0]

    def add(op: str, inputs: list[Value], attrs: dict[str, Any], shape: tuple,
            suffix: str, names: tuple[str, ...] = ("input",), output: Value | None = None
            ) -> Value:
        nonlocal position
        value = output or Value(f"{node.name}_{suffix}", shape, "float32")
        graph.insert(position, f"{node.name}_{suffix}", op, inputs, names, attrs, node.meta,
                     value)
        position += 1
        return value

    signal = add("reshape", [x], {"shape": (-1, width)}, (n, width), "signal")  # (N, W)
    slices = -(-k // s)
    reach = (slices - 1 + out) * s
    if reach > width:  # the last slice runs past the signal, into columns cut off below
        signal = add("pad", [signal], {"pad": [0, reach - width], "mode": "constant",
                                       "value": 0.0}, (n, reach), "padded")
    rows = [add("reshape", [add("slice", [signal], {"dim": 1, "start": j * s,
                                                    "end": j * s + out * s, "step": 1},
                                (n, out * s), f"slice{j}")],
                {"shape": (-1, out, s)}, (n, out, s), f"rows{j}")  # (N, OW, S)
            for j in range(slices)]
    frames = rows[0] if len(rows) == 1 else add(
        "concat", rows, {"dim": 2}, (n, out, len(rows) * s), "concat",
        ("tensors*",) * len(rows))
    if len(rows) * s != k:
        frames = add("slice", [frames], {"dim": 2, "start": 0, "end": k, "step": 1},
                     (n, out, k), "frames")  # (N, OW, K)
    inputs = [frames, Value(f"{node.name}_matrix", matrix.shape, "float32", data=matrix)]
    if "bias" in named:
        inputs.append(named["bias"])
    product = add("linear", inputs, {}, (n, out, filters), "linear",
                  ("input", "weight", "bias")[:len(inputs)])  # (N, OW, O)
    columns = add("permute", [product], {"dims": (0, 2, 1)}, (n, filters, out), "columns")
    add("reshape", [columns], {"shape": (-1, filters, 1, out)}, node.output.shape, "out",
        output=node.output)  # (N, O, 1, OW)


def frame_strided_convs(graph: Graph) -> Graph:
    for node in [n for n in graph.nodes if n.op == "conv2d"]:
        geometry = _geometry(node)
        if geometry is not None:
            _rewrite(graph, node, *geometry)
    return graph
