"""trim_dilated_convs: a dilated 3x3 conv as undilated-padding convs over the regions of its
output where the same taps fall inside the input.

A 3x3 conv with dilation ``d`` and padding ``d`` (per axis) reads output row ``y``'s taps at
rows ``y - d``, ``y``, ``y + d``: the first is padding for ``y < d``, the last for
``y >= h - d``. The rows split at ``d`` and ``h - d`` (and the columns likewise) into
regions whose taps all fall inside the input or all in the padding; each region is a conv
with padding 0, the kernel cut to its inside taps, over the input rows and columns those
taps read; the regions are joined by concats (columns, then rows). The padding taps'
multiplications by zero are not done: at CRAFT's refiner (64x64, dilation 24) 0.5625 of the
conv's work remains.

``winograd_convs`` calls it (on a conv whose epilogue is already fused: it goes to every
region's conv, as the bias) where ``share`` is at most ``SHARE``.
"""

from __future__ import annotations

import numpy as np

from nn.functional.conv import conv_padding

from ..graph import Graph, Node, Value
from ..ops._shapes import pair

SHARE = 0.8
"""Most of the conv's work the regions may keep. Measured on CRAFT's refiner (64 -> 128
channels at 64x64, relu, one thread, thread CPU time, medians of 5 interleaved rounds, load
1.5, against the direct dilated conv): dilation 24 (share 0.56) 0.64, 12 (0.77) 0.84; phases
(``phase_dilated_convs``) do better at dilation 6 (share 0.88; phases 0.72)."""


def _regions(size: int, dilation: int) -> list[tuple[int, int, int, int]]:
    """``(start, end, first tap, end tap)`` of the output rows (or columns) whose taps
    ``first : end`` fall inside the input."""
    cuts = sorted({0, size, *(c for c in (dilation, size - dilation) if 0 < c < size)})
    return [(a, b, 0 if a >= dilation else 1, 3 if b <= size - dilation else 2)
            for a, b in zip(cuts, cuts[1:])]


def share(node: Node) -> float:
    """The part of a dilated 3x3 conv's work (padding = dilation) the regions keep; 1.0 for
    any other conv2d (one with a residual, a dynamic shape or weights only known at run
    time)."""
    named = node.named_inputs()
    x, weight = named["input"], named["weight"]
    dilation = pair(node.attrs.get("dilation", 1))
    if (dilation == (1, 1) or "residual" in named or len(x.shape) != 4
            or not all(isinstance(d, int) for d in x.shape) or weight.data is None
            or tuple(weight.shape[2:]) != (3, 3)
            or pair(node.attrs.get("stride", 1)) != (1, 1)):
        return 1.0
    padding = conv_padding(node.attrs.get("padding", 0), (3, 3), (1, 1), dilation)
    if any(p != (d, d) for p, d in zip(padding, dilation)):
        return 1.0
    kept = 1.0
    for size, d in zip((int(x.shape[2]), int(x.shape[3])), dilation):
        kept *= sum((b - a) * (t1 - t0) for a, b, t0, t1 in _regions(size, d)) / (3 * size)
    return kept


def rewrite(graph: Graph, node: Node) -> list[Node]:
    """Replace ``node`` by its regions' convs and the concats joining them; the regions'
    convs."""
    named = node.named_inputs()
    x, weight, name = named["input"], named["weight"], node.name
    assert weight.data is not None
    kernel = np.asarray(weight.data, np.float32)
    n, o = int(x.shape[0]), int(node.output.shape[1])
    dh, dw = pair(node.attrs.get("dilation", 1))
    rows, cols = _regions(int(x.shape[2]), dh), _regions(int(x.shape[3]), dw)
    position = graph.nodes.index(node)
    graph.remove(node)
    rest = [(k, v) for k, v in named.items() if k not in ("input", "weight")]
    attrs = {**node.attrs, "padding": 0}

    def insert(suffix: str, op: str, inputs: list[Value], names: tuple[str, ...],
               attrs: dict, output: Value) -> Value:
        nonlocal position
        graph.insert(position, f"{name}_{suffix}" if suffix else name, op, inputs, names,
                     attrs, node.meta, output)
        position += 1
        return output

    def cut(value: Value, axis: int, start: int, end: int, suffix: str) -> Value:
        shape = tuple(int(d) for d in value.shape)
        if (start, end) == (0, shape[axis]):
            return value
        shape = shape[:axis] + (end - start,) + shape[axis + 1:]
        return insert(suffix, "slice", [value], ("input",),
                      {"dim": axis, "start": start, "end": end},
                      Value(f"{name}_{suffix}", shape, "float32"))

    def joined(parts: list[Value], axis: int, suffix: str, last: bool) -> Value:
        shape = tuple(int(d) for d in parts[0].shape)
        shape = shape[:axis] + (sum(int(p.shape[axis]) for p in parts),) + shape[axis + 1:]
        output = node.output if last else Value(f"{name}_{suffix}", shape, "float32")
        return insert("" if last else suffix, "concat", parts, ("tensors*",) * len(parts),
                      {"dim": axis}, output)

    bands, regions = [], []
    for i, (a, b, t0, t1) in enumerate(rows):
        band = cut(x, 2, a + (t0 - 1) * dh, b + (t1 - 2) * dh, f"rows{i}")
        parts = []
        for j, (a2, b2, u0, u1) in enumerate(cols):
            source = cut(band, 3, a2 + (u0 - 1) * dw, b2 + (u1 - 2) * dw, f"cols{i}{j}")
            w = np.ascontiguousarray(kernel[:, :, t0:t1, u0:u1])
            last = len(rows) == len(cols) == 1
            parts.append(insert(
                "" if last else f"region{i}{j}", "conv2d",
                [source, Value(f"{name}_w{i}{j}", w.shape, "float32", data=w),
                 *(v for _, v in rest)], ("input", "weight", *(k for k, _ in rest)), attrs,
                node.output if last else Value(f"{name}_region{i}{j}", (n, o, b - a, b2 - a2),
                                               "float32")))
            regions.append(parts[-1])
        bands.append(parts[0] if len(parts) == 1
                     else joined(parts, 3, f"band{i}", len(rows) == 1))
    if len(rows) > 1:
        joined(bands, 2, "", True)
    outputs = {id(v) for v in regions}
    return [n for n in graph.nodes if n.op == "conv2d" and id(n.output) in outputs]
