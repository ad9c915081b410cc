"""phase_dilated_convs: a dilated 3x3 conv as one undilated conv over its phase planes.

A 3x3 conv with dilation ``(dh, dw)``, stride 1 and padding ``(dh, dw)`` reads output pixel
``(y, x)``'s taps at rows ``y - dh, y, y + dh`` and columns ``x - dw, x, x + dw``: phase
``(y mod dh, x mod dw)`` of the output is an undilated 3x3 conv (padding 1) of the same
phase of the input. The plane is padded to a multiple of ``(dh, dw)`` (those rows and
columns are zero, as the conv's own padding), split into its ``dh * dw`` phase planes as a
batch (reshape, permute, reshape: phases outermost, so the moves keep 4 axes at any batch),
run as one conv that ``winograd_convs`` takes as F(4x4, 3x3), and interleaved back.

``winograd_convs`` runs a conv of equal dilations over its own plane instead where
``winograd_convs.dilated_tile`` expects that to pay (the same tiles without the moves: at
CRAFT's dilation 6, 0.49 of the direct conv against the phases' 0.62).
``winograd_convs`` calls it (it applies only where Winograd runs) before its own rewrite, on
a conv whose epilogue is already fused (it moves to the phase conv; elementwise, it commutes
with the moves). It applies to a conv ``winograd_convs`` would take but for its dilation,
without a residual, whose F(4x4) tiles over the phase planes cover at most ``COVER`` times
its output.
"""

from __future__ import annotations

import math

from nn.functional.conv import conv_padding

from ..graph import Graph, Node, Value
from ..ops._shapes import pair

COVER = 1.3
"""Most outputs the phases' F(4x4) tiles may cover per output of the conv. Measured on
CRAFT's refiner (64 -> 128 channels at 64x64, relu, one thread, phases + F(4x4) against the
dilated conv, medians of interleaved runs, load 1-2): dilation 6 (11x11 phases, cover 1.27)
0.72, 18 (4x4, 1.27) 0.91; 12 (6x6, 2.25) 1.36, 24 (3x3, 2.25) 1.83; F(2x2) lost at every
dilation (1.09-2.25), the direct conv over the phases too (1.37-1.64)."""


def _cover(size: int, dilation: int) -> int:
    """The rows (or columns) the phases' 4-row tiles cover for ``size`` output rows."""
    phase_rows = -(-size // dilation)
    return dilation * 4 * -(-phase_rows // 4)


def applies(node: Node) -> bool:
    """Whether ``node`` (a conv2d) is a dilated 3x3 conv to run over its phases."""
    named = node.named_inputs()
    x, weight = named["input"], named["weight"]
    dilation = pair(node.attrs.get("dilation", 1))
    if (dilation == (1, 1) or "residual" in named or len(x.shape) != 4
            or not all(isinstance(d, int) for d in x.shape)
            or tuple(weight.shape[2:]) != (3, 3)):
        return False
    padding = conv_padding(node.attrs.get("padding", 0), (3, 3), (1, 1), dilation)
    size = [int(d) for d in x.shape[2:]]
    return (all(p == (d, d) for p, d in zip(padding, dilation))
            and math.prod(_cover(s, d) for s, d in zip(size, dilation))
            <= COVER * math.prod(size))


def rewrite(graph: Graph, node: Node) -> Node:
    """Replace ``node`` by the moves and the undilated conv over the phases; returns that
    conv's node."""
    named = node.named_inputs()
    x, name = named["input"], node.name
    n, c, h, w = (int(d) for d in x.shape)
    dh, dw = pair(node.attrs.get("dilation", 1))
    rows, cols = -(-h // dh), -(-w // dw)
    o = int(node.output.shape[1])
    position = graph.nodes.index(node)
    graph.remove(node)
    steps = 0

    def insert(suffix: str, op: str, inputs: list[Value], names: tuple[str, ...],
               attrs: dict, shape: tuple[int, ...] | None) -> Value:
        nonlocal steps
        output = (node.output if shape is None
                  else Value(f"{name}_{suffix}", shape, "float32"))
        graph.insert(position + steps, name if shape is None else f"{name}_{suffix}", op,
                     inputs, names, attrs, node.meta, output)
        steps += 1
        return output

    if (rows * dh, cols * dw) != (h, w):
        x = insert("pad", "pad", [x], ("input",),
                   {"pad": (0, cols * dw - w, 0, rows * dh - h)}, (n, c, rows * dh, cols * dw))
    x = insert("split", "reshape", [x], ("input",),
               {"shape": (n, c, rows, dh, cols, dw)}, (n, c, rows, dh, cols, dw))
    x = insert("phases", "permute", [x], ("input",), {"dims": (3, 5, 0, 1, 2, 4)},
               (dh, dw, n, c, rows, cols))
    x = insert("batch", "reshape", [x], ("input",),
               {"shape": (dh * dw * n, c, rows, cols)}, (dh * dw * n, c, rows, cols))
    attrs = {k: v for k, v in node.attrs.items() if k not in ("dilation", "padding")}
    y = insert("phase_conv", "conv2d", [x, *(v for k, v in named.items() if k != "input")],
               ("input", *(k for k in named if k != "input")), {**attrs, "padding": 1},
               (dh * dw * n, o, rows, cols))
    conv = graph.nodes[position + steps - 1]
    y = insert("unbatch", "reshape", [y], ("input",),
               {"shape": (dh, dw, n, o, rows, cols)}, (dh, dw, n, o, rows, cols))
    y = insert("interleave", "permute", [y], ("input",), {"dims": (2, 3, 4, 0, 5, 1)},
               (n, o, rows, dh, cols, dw))
    crops = [(axis, size) for axis, size, padded in ((2, h, rows * dh), (3, w, cols * dw))
             if size != padded]
    shape: tuple[int, ...] = (n, o, rows * dh, cols * dw)
    y = insert("merge", "reshape", [y], ("input",), {"shape": shape},
               shape if crops else None)
    for index, (axis, size) in enumerate(crops, 1):
        shape = shape[:axis] + (size,) + shape[axis + 1:]
        y = insert(f"crop{axis}", "slice", [y], ("input",),
                   {"dim": axis, "start": 0, "end": size},
                   shape if index < len(crops) else None)
    return conv
