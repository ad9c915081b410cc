"""phase_dilated_convs: a dilated 3x3 conv as one undilated conv over its phase planes.

A 3x3 conv with dilation ``(dh, dw)``, stride 1 and padding ``(dh, dw)`` reads output pixel
``(y, x)``'s taps at rows ``y - dh, y, y + dh`` and columns ``x - dw, x, x + dw``: phase
``(y mod dh, x mod dw)`` of the output is an undilated 3x3 conv (padding 1) of the same
phase of the input. The plane is padded to a multiple of ``(dh, dw)`` (those rows and
columns are zero, as the conv's own padding), split into its ``dh * dw`` phase planes as a
batch (reshape, permute, reshape: phases outermost, so the moves keep 4 axes at any batch),
run as one conv that ``winograd_convs`` takes as F(4x4, 3x3), and interleaved back.

``winograd_convs`` calls it (it applies only where Winograd runs) before its own rewrite, on
a conv whose epilogue is already fused (it moves to the phase conv; elementwise, it commutes
with the moves). It applies to a conv ``winograd_convs`` would take but for its dilation,
without a residual, whose F(4x4) tiles over the phase planes cover at most ``COVER`` times
its output. Where they cover more, but whole 4-row phase tiles fit (rows and columns
``0 : 4 * d * (size // (4 * d))``), the phases run over that part only (the input padded by
the dilation and cut to it, padding 0, one tile per phase at CRAFT's dilation 12) and the
rest, the columns right of it and the rows below, are direct dilated convs with padding 0
over cuts of the same padded input, joined by two concats. Measured on CRAFT's refiner's
dilation-12 conv (one thread, thread CPU time, medians of 5 interleaved rounds, load 1-2):
0.96 of the direct conv (the whole-plane phases 1.47): the remainders run at the direct
conv's rate per output, the phases' per-image transforms on 144 one-tile planes cost.
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


def _whole(size: int, dilation: int) -> int:
    """The leading output rows (or columns) whole 4-row phase tiles cover exactly."""
    return 4 * dilation * (size // (4 * dilation))


def _covered(size: tuple[int, int], dilation: tuple[int, int]) -> bool:
    """Whether the phases' F(4x4) tiles over the whole plane cover at most ``COVER`` times
    its outputs."""
    return (math.prod(_cover(s, d) for s, d in zip(size, dilation))
            <= COVER * math.prod(size))


def applies(node: Node) -> bool:
    """Whether ``node`` (a conv2d) is a dilated 3x3 conv to run over its phases (all of
    them, or the part whole phase tiles cover)."""
    named = node.named_inputs()
    x, weight = named["input"], named["weight"]
    dilation = pair(node.attrs.get("dilation", 1))
    if (dilation == (1, 1) or "residual" in named or len(x.shape) != 4
            or not all(isinstance(d, int) for d in x.shape)
            or tuple(weight.shape[2:]) != (3, 3)):
        return False
    padding = conv_padding(node.attrs.get("padding", 0), (3, 3), (1, 1), dilation)
    size = (int(x.shape[2]), int(x.shape[3]))
    return (all(p == (d, d) for p, d in zip(padding, dilation))
            and (_covered(size, dilation)
                 or all(_whole(s, d) > 0 for s, d in zip(size, dilation))))


class _Builder:
    """Inserts nodes in order where ``node`` stood; the one with no shape writes its output."""

    def __init__(self, graph: Graph, node: Node) -> None:
        self.graph, self.node = graph, node
        self.position = graph.nodes.index(node)
        graph.remove(node)

    def __call__(self, suffix: str, op: str, inputs: list[Value], names: tuple[str, ...],
                 attrs: dict, shape: tuple[int, ...] | None) -> Value:
        node, name = self.node, self.node.name
        output = (node.output if shape is None
                  else Value(f"{name}_{suffix}", shape, "float32"))
        self.graph.insert(self.position, name if shape is None else f"{name}_{suffix}", op,
                          inputs, names, attrs, node.meta, output)
        self.position += 1
        return output

    def crop(self, suffix: str, x: Value, axis: int, start: int, end: int,
             last: bool = False) -> Value:
        """``x`` cut to ``start:end`` on ``axis`` (``x`` itself when that is all of it)."""
        if (start, end) == (0, x.shape[axis]) and not last:
            return x
        shape = tuple(int(d) for d in x.shape)
        shape = shape[:axis] + (end - start,) + shape[axis + 1:]
        return self(suffix, "slice", [x], ("input",),
                    {"dim": axis, "start": start, "end": end}, None if last else shape)


def _phase_conv(insert: _Builder, x: Value, padding: int,
                out: tuple[int, int] | None) -> tuple[Value, Node]:
    """The conv over ``x``'s phase planes (``x``'s plane a multiple of the dilation), with
    ``padding``, interleaved back to ``(n, o) + out`` (the output itself when ``out`` is
    None); returns that and the phase conv's node."""
    node, named = insert.node, insert.node.named_inputs()
    n, c, ph, pw = (int(d) for d in x.shape)
    dh, dw = pair(node.attrs.get("dilation", 1))
    rows, cols, o = ph // dh, pw // dw, int(node.output.shape[1])
    x = insert("split", "reshape", [x], ("input",),
               {"shape": (n, c, rows, dh, cols, dw)}, (n, c, rows, dh, cols, dw))
    x = insert("phases", "permute", [x], ("input",), {"dims": (3, 5, 0, 1, 2, 4)},
               (dh, dw, n, c, rows, cols))
    x = insert("batch", "reshape", [x], ("input",),
               {"shape": (dh * dw * n, c, rows, cols)}, (dh * dw * n, c, rows, cols))
    attrs = {k: v for k, v in node.attrs.items() if k not in ("dilation", "padding")}
    rows, cols = rows + 2 * padding - 2, cols + 2 * padding - 2
    y = insert("phase_conv", "conv2d", [x, *(v for k, v in named.items() if k != "input")],
               ("input", *(k for k in named if k != "input")), {**attrs, "padding": padding},
               (dh * dw * n, o, rows, cols))
    conv = insert.graph.nodes[insert.position - 1]
    y = insert("unbatch", "reshape", [y], ("input",),
               {"shape": (dh, dw, n, o, rows, cols)}, (dh, dw, n, o, rows, cols))
    y = insert("interleave", "permute", [y], ("input",), {"dims": (2, 3, 4, 0, 5, 1)},
               (n, o, rows, dh, cols, dw))
    shape = (n, o, rows * dh, cols * dw)
    return insert("merge", "reshape", [y], ("input",), {"shape": shape},
                  shape if out is None or out != shape[2:] else None), conv


def _whole_plane(insert: _Builder) -> Node:
    """Phases over the plane padded to a multiple of the dilation, then cropped."""
    x = insert.node.named_inputs()["input"]
    n, c, h, w = (int(d) for d in x.shape)
    dh, dw = pair(insert.node.attrs.get("dilation", 1))
    ph, pw = dh * -(-h // dh), dw * -(-w // dw)
    if (ph, pw) != (h, w):
        x = insert("pad", "pad", [x], ("input",), {"pad": (0, pw - w, 0, ph - h)},
                   (n, c, ph, pw))
    y, conv = _phase_conv(insert, x, 1, (h, w))
    if (ph, pw) != (h, w):
        crops = [(axis, size) for axis, size, p in ((2, h, ph), (3, w, pw)) if size != p]
        for index, (axis, size) in enumerate(crops, 1):
            y = insert.crop(f"crop{axis}", y, axis, 0, size, index == len(crops))
    return conv


def _split_plane(insert: _Builder) -> Node:
    """Phases over the leading rows and columns whole phase tiles cover, direct dilated
    convs over the rest (the columns right of them, then the rows below), joined."""
    node, named = insert.node, insert.node.named_inputs()
    x = named["input"]
    n, c, h, w = (int(d) for d in x.shape)
    o = int(node.output.shape[1])
    dh, dw = pair(node.attrs.get("dilation", 1))
    rows, cols = _whole(h, dh), _whole(w, dw)
    padded = insert("pad", "pad", [x], ("input",), {"pad": (dw, dw, dh, dh)},
                    (n, c, h + 2 * dh, w + 2 * dw))
    top = insert.crop("top", padded, 2, 0, rows + 2 * dh)
    main, conv = _phase_conv(insert, insert.crop("main", top, 3, 0, cols + 2 * dw), 0, None)
    attrs = {**node.attrs, "padding": 0}
    rest = [(k, v) for k, v in named.items() if k != "input"]

    def direct(suffix: str, source: Value, shape: tuple[int, ...] | None) -> Value:
        return insert(suffix, "conv2d", [source, *(v for _, v in rest)],
                      ("input", *(k for k, _ in rest)), attrs, shape)

    if cols < w:
        right = direct("right", insert.crop("right_in", top, 3, cols, w + 2 * dw),
                       (n, o, rows, w - cols))
        main = insert("upper", "concat", [main, right], ("tensors*", "tensors*"), {"dim": 3},
                      (n, o, rows, w) if rows < h else None)
    if rows < h:
        below = direct("below", insert.crop("below_in", padded, 2, rows, h + 2 * dh),
                       (n, o, h - rows, w))
        insert("join", "concat", [main, below], ("tensors*", "tensors*"), {"dim": 2}, None)
    return conv


def rewrite(graph: Graph, node: Node) -> Node:
    """Replace ``node`` by the moves, the undilated conv over the phases and (where whole
    phase tiles cover only part of the plane) the direct convs over the rest; returns the
    phase conv's node."""
    insert = _Builder(graph, node)
    x = node.named_inputs()["input"]
    size = (int(x.shape[2]), int(x.shape[3]))
    if _covered(size, pair(node.attrs.get("dilation", 1))):
        return _whole_plane(insert)
    return _split_plane(insert)
