"""winograd_convs: a dense 3x3 stride-1 conv becomes Winograd F(2x2, 3x3) or F(4x4, 3x3).

``winograd_input`` (reading the unpadded input, the conv's padding handled there) -> a
grouped 1x1 ``conv2d`` ((m + 2)^2 groups, the weight ``G g G^T`` from
``nn.functional.winograd_weight``) -> ``winograd_output`` with the conv's bias, fused
epilogue and residual: 16 multiplies per 2x2 output tile and channel pair instead of 36, or
36 per 4x4 tile instead of 144 (``tile`` picks m; see ``nn/functional/winograd.py``).

It applies to a float32 conv2d with a constant (O, C, 3, 3) weight, a constant bias or none,
stride 1, dilation 1 (or a dilation: where ``dilated_tile`` expects it to pay, over the
conv's own plane with the transforms' dilated kernels, tiles of outputs ``dilation`` apart;
else, where the conv's padding taps are enough of its work, split by ``trim_dilated_convs``
into direct convs that skip them; else over the phase planes ``phase_dilated_convs``
takes), one group, a static
input shape, and at least ``MIN_CHANNELS`` input and output channels, whose fused epilogue
has an output transform row. It runs after ``fuse_epilogues`` (the conv's epilogue travels
to the output transform);
``modelc.export(..., winograd=False)`` leaves it out of the pipeline.
"""

from __future__ import annotations

import math

import numpy as np

from nn.functional.conv import conv_padding
from nn.functional.winograd import winograd_weight

from ..graph import Graph, Node, Value
from ..ops._shapes import pair
from ..ops.winograd_output import kernel, tiles
from . import phase_dilated_convs, trim_dilated_convs

MIN_CHANNELS = 16
"""Fewest input and output channels: with the transform kernels, NudeNet's 16 @80 ran 0.90
of the direct conv and ddddocr's 24 @104 0.86 (bench/winograd.py; 1.35 before them)."""
TILE4 = True
"""Whether convs run F(4x4, 3x3) where ``tile`` picks it."""
TILE4_MIN_TILES = 49
"""The fewest 4x4 tiles of an F(4x4, 3x3) conv's output (per image): 28x28 and larger.
NudeNet (its F(4x4) at 20x20 too) ran 38.9 / 39.8 ms against 38.4 / 38.4 with 49, its
``.wasm`` 22.7 MB against 18.3 (peers.py --clock cpu, alternating, load 3.7-5.1). Again
with the transforms at opt level none, F(4x4) also at 26x26 and 20x20 (4x4 tiles covering
up to 1.2 times what 2x2 tiles cover, 25 tiles): one conv ran 0.83-0.85 of F(2x2) at 96 @26,
0.80 at 256 @20, but whole models did not follow (x onnxruntime, two alternating pairs, load
7-9: ddddocr 2.47 / 2.44 against 2.48 / 2.39, NudeNet 2.28 / 2.26 against 2.19 / 2.24,
occular-deskew 1.76 / 1.78 against 1.85 / 1.85) and their ``.wasm`` grew by 4.4-7.6 MB."""
DILATED = True
"""Whether dilated convs may run as Winograd over their own plane (``dilated_tile``)."""
DILATED_COST = (0.14, 1.1, 1.13)
"""(fixed, per work, per share): a dilated conv's time over the direct conv's as Winograd,
``fixed + per_work * w`` for the product's multiplies ``w`` over the direct conv's, and as
``trim_dilated_convs``' regions, ``per_share * share``. Fitted on CRAFT's refiner's ASPP
convs (64 -> 128 at 64x64, relu; ``bench/dilated_convs.py --rounds 5``, load 5.5, x the
direct conv): dilated F(4x4) at d = 6, 12, 18, 24 (w = 0.32, 0.56, 0.32, 0.56) 0.49, 0.77,
0.46, 0.75; F(2x2) 0.77, 0.85, 0.80, 1.00; the regions (share 0.88, 0.77, 0.66, 0.56) 0.87
at 12 and 0.63 at 24; the phases 0.62 at 6."""
SETS, LINE = 64, 64
"""An L1 data cache's sets and line bytes (48 KiB, 12 ways: the x86 cores measured)."""


def plane_length(tiles: int, channels: tuple[int, ...], positions: int = 16) -> int:
    """The length of the transforms' planes: ``tiles`` rounded up to a multiple of 4, or a few
    multiples of 4 more, so that the ``positions`` planes of each transform (``channels *
    length`` floats apart) start in as many cache sets as can be.

    NOTE: planes a multiple of 4 KiB apart put the stores of a group of tiles into one L1
    set: the input transform of 64 channels at 56x56 (784 tiles) ran 1.5x the time of 63
    channels or 54x54, and 16 channels at 80x80 F(2x2) as a whole 0.85 -> 0.65 ms at 1596
    instead of 1600. A length off a multiple of 4 leaves the grouped product 1-3 pixels past
    its last panel: 512 @7 with 17 instead of 16 ran 1.2x.
    """
    def crowding(length: int) -> int:
        sets = [[(k * c * length * 4) // LINE % SETS for k in range(positions)]
                for c in channels]
        return max(starts.count(s) for starts in sets for s in starts)

    first = -(-tiles // 4) * 4
    return min(range(first, first + 64, 4), key=lambda length: (crowding(length), length))


def tile(oh: int, ow: int) -> int:
    """The output tile for an ``oh`` x ``ow`` output: 4 (F(4x4, 3x3): 36 multiplies per 16
    outputs against F(2x2)'s 64) when ``TILE4``, its 4x4 tiles cover at most 1.1 times what
    2x2 tiles cover and there are at least ``TILE4_MIN_TILES`` of them, else 2.

    NOTE: measured per layer (bench/winograd.py, F(4x4) / F(2x2) time): 0.70 at 64 @56, 0.83
    @28, 0.72 @104, 0.75 @52; 0.94 @20, 1.03 @40 (32 channels); but 1.16 at 256 @14 (16x16
    against 14x14), 1.19 @13, 1.26 @10, 1.00 @26. At 512 @7 (4 tiles) it ran 0.76, but its
    weight is 4 times the conv's (37.7 MB a conv, against 16.8 MB for F(2x2)).

    Winograd itself pays on every plane the models have, in situ too (``bench/op_profile.py
    --convs``, each node once in graph order, weights cold): with the pass off for planes up
    to 14x14, ResNet-18's 3x3 convs at 512 @7 took 17.0 ms against 12.3 for F(2x2) with its
    transforms, 256 @14 14.7 against 8.8; open_nsfw's 128 @14 8.1 against 5.4, 256 @7 4.8
    against 3.5 (load 3-4). Their products are slower in situ than hot (ResNet-18's 512 @7
    35 against 54 GFLOPS) because the weight streams from memory each inference; reading the
    next block of it ahead in the dense tile gained nothing.
    """
    cover2, cover4 = (math.prod(-(-d // m) * m for d in (oh, ow)) for m in (2, 4))
    return (4 if TILE4 and cover4 <= 1.1 * cover2 and cover4 >= 16 * TILE4_MIN_TILES
            else 2)


def _applies(node: Node) -> bool:
    named = node.named_inputs()
    x, weight, bias = named["input"], named["weight"], named.get("bias")
    return (weight.data is not None and x.dtype == weight.dtype == "float32"
            and len(x.shape) == 4 and all(isinstance(d, int) for d in x.shape)
            and tuple(weight.shape[2:]) == (3, 3) and node.attrs.get("groups", 1) == 1
            and pair(node.attrs.get("stride", 1)) == (1, 1)
            and min(int(weight.shape[0]), int(weight.shape[1])) >= MIN_CHANNELS
            and (bias is None or bias.data is not None)
            and kernel(tuple(node.attrs.get("epilogue", ()))) is not None)


def _dilated_cost(size: tuple[int, int], dilation: int) -> tuple[int, float]:
    """(m, the expected time over the direct conv's) of a conv of ``dilation`` and output
    ``size`` run as Winograd over its own plane with the tile of less product work (F(4x4)
    at a tie; ``DILATED_COST``)."""
    oh, ow = size
    work = {m: (m + 2) ** 2 * math.prod(tiles(size, m, dilation)) for m in (2, 4)}
    m = min(work, key=lambda k: (work[k], -k))
    fixed, per_work, _ = DILATED_COST
    return m, fixed + per_work * work[m] / (9 * oh * ow)


def _trimmed_cost(node: Node, dilation: int) -> float:
    """The expected time over the direct conv's of ``trim_dilated_convs``' regions (1.0
    where it does not apply), the centre region (every tap inside the input) run as Winograd
    over its own plane where that is expected to pay (``DILATED_COST``)."""
    trimmed = trim_dilated_convs.share(node)
    if trimmed >= 1.0:
        return 1.0
    per_share = DILATED_COST[2]
    h, w = (int(s) for s in node.inputs[0].shape[2:])
    centre = (h - 2 * dilation, w - 2 * dilation)
    if min(centre) < 1:
        return min(1.0, per_share * trimmed)
    inner = centre[0] * centre[1] / (h * w)
    return min(1.0, per_share * (trimmed - inner)
               + inner * min(per_share, _dilated_cost(centre, dilation)[1]))


def dilated_tile(node: Node) -> int | None:
    """The output tile m for a dilated conv run as Winograd over its own plane (the
    transforms' dilated kernels), or None: a 3x3 conv of equal dilations ``d`` > 1 and
    padding ``d`` (or 0: the centre region ``trim_dilated_convs`` cuts), no residual, where
    F(m x m) (of the two tiles, the one of less product work; F(4x4) at a tie) is expected
    to beat both the direct conv and ``trim_dilated_convs``' regions (``DILATED_COST``),
    and ``DILATED``."""
    named = node.named_inputs()
    d = pair(node.attrs.get("dilation", 1))
    if not DILATED or d[0] != d[1] or d[0] == 1 or "residual" in named:
        return None
    padding = conv_padding(node.attrs.get("padding", 0), (3, 3), (1, 1), d)
    if any(p not in ((d[0], d[0]), (0, 0)) for p in padding):
        return None
    oh, ow = (int(s) for s in node.output.shape[2:])
    m, cost = _dilated_cost((oh, ow), d[0])
    return m if cost < _trimmed_cost(node, d[0]) else None


def _rewrite(graph: Graph, node: Node, m: int | None = None) -> None:
    named = node.named_inputs()
    x, weight, name = named["input"], named["weight"], node.name
    assert weight.data is not None
    n, c = (int(d) for d in x.shape[:2])
    o, (oh, ow) = int(weight.shape[0]), (int(d) for d in node.output.shape[2:])
    m = m or tile(oh, ow)
    dilation = pair(node.attrs.get("dilation", 1))[0]
    (th, tw), a = tiles((oh, ow), m, dilation), m + 2
    (top, _), (left, _) = conv_padding(node.attrs.get("padding", 0), (3, 3), (1, 1),
                                       (dilation, dilation))
    dilated = {"dilation": dilation} if dilation > 1 else {}
    position = graph.nodes.index(node)
    graph.remove(node)
    steps = 0

    def insert(suffix: str, op: str, inputs: list[Value], names: tuple[str, ...],
               attrs: dict, output: Value) -> Value:
        nonlocal steps
        graph.insert(position + steps, f"{name}_{suffix}" if suffix else name, op, inputs,
                     names, attrs, node.meta, output)
        steps += 1
        return output

    count = plane_length(n * th * tw, (c, o), a * a)
    tiles_in = insert("tiles", "winograd_input", [x], ("input",),
                      {"padding": (top, left), "tiles": (th, tw), "count": count, "tile": m,
                       **dilated},
                      Value(f"{name}_tiles", (1, a * a * c, 1, count), "float32"))
    u = winograd_weight(np.asarray(weight.data, np.float32), m)
    products = insert("products", "conv2d",
                      [tiles_in, Value(f"{name}_winograd_w", u.shape, "float32", data=u)],
                      ("input", "weight"), {"groups": a * a},
                      Value(f"{name}_products", (1, a * a * o, 1, count), "float32"))
    rest = [(k, v) for k, v in named.items() if k in ("bias", "residual")]
    attrs: dict = {"batch": n, "size": (oh, ow), "tile": m, **dilated}
    if node.attrs.get("epilogue"):
        attrs["epilogue"] = tuple(node.attrs["epilogue"])
    insert("", "winograd_output", [products, *(v for _, v in rest)],
           ("input", *(k for k, _ in rest)), attrs, node.output)


def winograd_convs(graph: Graph) -> Graph:
    """Rewrite every eligible conv2d (see the module docstring); a dilated one over its own
    plane where ``dilated_tile`` picks a tile, else into its regions' direct convs where
    ``trim_dilated_convs`` keeps at most ``SHARE`` of its work (the centre region over its
    own plane where ``dilated_tile`` picks a tile for it), else where
    ``phase_dilated_convs`` runs it as an undilated conv over its phases, as F(4x4, 3x3)."""
    for node in [n for n in graph.nodes if n.op == "conv2d"]:
        if not _applies(node):
            continue
        if pair(node.attrs.get("dilation", 1)) == (1, 1):
            _rewrite(graph, node)
        elif dilated_tile(node) is not None:
            _rewrite(graph, node, dilated_tile(node))
        elif trim_dilated_convs.share(node) <= trim_dilated_convs.SHARE:
            for region in trim_dilated_convs.rewrite(graph, node):
                if _applies(region) and dilated_tile(region) is not None:
                    _rewrite(graph, region, dilated_tile(region))
        elif TILE4 and phase_dilated_convs.applies(node):
            _rewrite(graph, phase_dilated_convs.rewrite(graph, node), 4)
    return graph
