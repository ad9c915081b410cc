"""channels_last_point_convs: 1x1 convs on small planes as linears over channels-last rows.

On a plane of a few hundred pixels (PP-OCR's recognizers: 6 x 80 and 3 x 80; PP-LCNet's
14 x 14) the pointwise conv kernel, which makes the output channels its rows and the pixels
its columns, ran at 48-55 GFLOPS hot where the ``f32_linear`` tile, the pixels' (pixels,
channels) rows times its packed weight, ran the same products at 54-57 (a 128-bit FMA peak
of ~65). So such a conv becomes ``linear(rows(x), w (O, C), b)`` with the conv's epilogue (a
residual add, an activation) still fused, the residual read as rows too. ``rows(x)`` is x
permuted to channels-last and reshaped to (N, H * W, C); the linear's rows go back to NCHW
the same way, for the users that are not such convs. A value that already has rows (the
output of a converted conv, the input two convs share) is never transposed again, so a chain
of 1x1 convs (conv -> gelu -> conv + residual in SVTR and LCNet blocks) transposes once at
its entry and once at its exit.

It applies to a conv2d with a constant float32 weight, a 1x1 kernel, stride 1, no padding,
no groups, an output plane of at most ``MOST_PIXELS`` pixels and ``LEAST_WORK``, in a chain
of such convs (``_chained``). It runs after
``fuse_epilogues``: the ``linear`` family fuses the same epilogues as the conv kernels.
"""

from __future__ import annotations

from nn.functional.conv import conv_padding

from ..graph import Dim, Graph, Node, Value
from ..ops._shapes import pair
from ._conv_to_linear import detach_conv

MOST_PIXELS = 512
"""The largest plane (h * w) whose 1x1 convs run as linears."""
LEAST_WORK = 16384
"""The least c * o (multiply-adds a pixel) converted: the linear gains 5-10% of the product
over the pointwise kernel, and the transposes at a chain's ends move c + o floats a pixel."""


def _applies(node: Node) -> bool:
    named = node.named_inputs()
    x, weight = named["input"], named["weight"]
    if (weight.data is None or weight.dtype != "float32" or x.dtype != "float32"
            or len(x.shape) != 4 or tuple(weight.shape[2:]) != (1, 1)):
        return False
    h, w = x.shape[2:]
    pads = conv_padding(node.attrs.get("padding", 0), (1, 1), pair(node.attrs.get("stride", 1)),
                        pair(node.attrs.get("dilation", 1)))
    return (isinstance(h, int) and isinstance(w, int) and h * w <= MOST_PIXELS
            and int(weight.shape[0]) * int(weight.shape[1]) >= LEAST_WORK
            and pair(node.attrs.get("stride", 1)) == (1, 1) and pads == ((0, 0), (0, 0))
            and node.attrs.get("groups", 1) == 1
            and ("bias" not in named or named["bias"].data is not None))


class _Rows:
    """The channels-last rows of NCHW values, made once each, and the moves to NCHW (of
    converted convs' rows, or bypassed) that may end up unread: removed at the end."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.of: dict[int, Value] = {}
        self.back: list[Node] = []

    def rows(self, x: Value, position: int) -> tuple[Value, int]:
        """``x`` (N, C, H, W) as (N, H * W, C) rows, inserted at ``position`` if new; the
        position after what was inserted."""
        if id(x) in self.of:
            return self.of[id(x)], position
        n, c, h, w = _sizes(x)
        source = x.producer
        if source is not None and _from_channels_last(x):
            last = source.inputs[0]  # x is channels-last data moved to NCHW: read that
            self.back.append(source)
        else:
            last = Value(f"{x.name}_last", (n, h, w, c), x.dtype)  # (N, H, W, C)
            self.graph.insert(position, f"{x.name}_last", "permute", [x], ("input",),
                              {"dims": (0, 2, 3, 1)}, {}, last)
            position += 1
        rows = Value(f"{x.name}_rows", (n, h * w, c), x.dtype)  # (N, H * W, C)
        self.graph.insert(position, f"{x.name}_rows", "reshape", [last], ("input",),
                          {"shape": (-1, h * w, c)}, {}, rows)
        self.of[id(x)] = rows
        return rows, position + 1

    def convert(self, node: Node) -> None:
        position, named, matrix = detach_conv(self.graph, node)
        x, out = named["input"], node.output
        n, o, h, w = _sizes(out)
        rows, position = self.rows(x, position)
        inputs = [rows, Value(f"{node.name}_matrix", matrix.shape, "float32", data=matrix)]
        names = ["input", "weight"]
        if "bias" in named:
            inputs.append(named["bias"])
            names.append("bias")
        if "residual" in named:
            residual, position = self.rows(named["residual"], position)
            inputs.append(residual)
            names.append("residual")
        product = Value(f"{node.name}_rows", (n, h * w, o), "float32")  # (N, H * W, O)
        epilogue = node.attrs.get("epilogue", ())
        self.graph.insert(position, f"{node.name}_rows", "linear", inputs, tuple(names),
                          {"epilogue": epilogue} if epilogue else {}, node.meta, product)
        last = Value(f"{node.name}_last", (n, h, w, o), "float32")  # (N, H, W, O)
        self.graph.insert(position + 1, f"{node.name}_last", "reshape", [product], ("input",),
                          {"shape": (-1, h, w, o)}, node.meta, last)
        self.graph.insert(position + 2, node.name, "permute", [last], ("input",),
                          {"dims": (0, 3, 1, 2)}, node.meta, out)  # (N, O, H, W)
        self.of[id(out)] = product
        self.back += [made for made in (out.producer, last.producer) if made is not None]

    def drop_unread(self) -> None:
        """Remove the moves to NCHW that no node or graph output reads."""
        outputs = {id(v) for v in self.graph.outputs.values()}
        for node in self.back:
            if not node.output.users and id(node.output) not in outputs:
                self.graph.remove(node)


def _sizes(x: Value) -> tuple[Dim, int, int, int]:
    """The batch and the static channels, height and width of NCHW ``x`` (conv2d's rule)."""
    n, c, h, w = x.shape
    assert isinstance(c, int) and isinstance(h, int) and isinstance(w, int)
    return n, c, h, w


def _from_channels_last(x: Value) -> bool:
    source = x.producer
    return source is not None and source.op == "permute" and source.attrs["dims"] == (0, 3, 1, 2)


def _chained(convs: list[Node]) -> list[Node]:
    """The convs among ``convs`` that share a value with another of them (one's output is
    another's input or residual, or two read one input) or read channels-last data: a lone
    1x1 conv between two depthwise convs (PP-LCNet's blocks) would pay both transposes for
    itself, which measured no faster than the pointwise kernel."""
    made = {id(node.output) for node in convs}
    readers: dict[int, int] = {}
    for node in convs:
        key = id(node.named_inputs()["input"])
        readers[key] = readers.get(key, 0) + 1
    read = {id(v) for node in convs for name, v in node.named_inputs().items()
            if name in ("input", "residual")}
    return [node for node in convs
            if id(node.output) in read or readers[id(node.named_inputs()["input"])] > 1
            or any(id(v) in made for name, v in node.named_inputs().items()
                   if name in ("input", "residual"))
            or _from_channels_last(node.named_inputs()["input"])]


def channels_last_point_convs(graph: Graph) -> Graph:
    rows = _Rows(graph)
    for node in _chained([n for n in graph.nodes if n.op == "conv2d" and _applies(n)]):
        rows.convert(node)
    rows.drop_unread()
    return graph
