"""The conv family run as a gemm (``f32_conv2d_gemm[_add][_<activation>]``): per image and
group, ``Y[o, p] = W[o, kk] @ cols[kk, p]`` (``wasm_kernels.pack_im2col``), with the dense
tile of ``f32_linear`` (``dense_tile``), the conv's epilogue fused into its stores.

The weight is packed at compile time as the tile's A, in the tiles the driver runs on it
(``pack_im2col.tiles``: 5 output channels, 4 step-major and a fifth read in place, then 4).
A padded input is copied inside its zero borders into the scratch ``xp`` (per image and group,
the rows a chunk reads just before it packs them); the columns are packed at run time by
``im2col`` into the scratch ``ws``, ``columns`` output pixels at a time, in the panel layout
``f32_linear`` reads its weight in, every chunk at ``ws``: the region of a thread's part of the
pixels (``ws`` is sized for every pixel and arrives moved to the part, so threads never share a
byte of it), which the next chunk overwrites while it is still in cache (a region per chunk,
the whole of ``ws`` written once per call, ran ResNet-18's 3x3 @56 and ddddocr's 3x3/2 @104
1.07-1.13x slower: the stores missed L2); then the linear driver runs on them with ``m`` = the
group's output channels, ``n`` = the chunk's pixels and C's row stride the output plane: A's
block of channels stays in L2 while the chunk's panels stream past it, the tile storing each
channel's pixels in place in NCHW. The kernel computes pixels ``first .. first + pixels`` of
each plane (``parallel.splits`` cuts that range into a thread's parts). Every stride, padding,
dilation and group count goes the same way, except a 1x1 conv without padding, whose input
planes (subsampled first at a larger stride) are B as they are: the driver reads them in
place, nothing is packed (``conv_pointwise``), and a conv that ``pack_im2col.taps`` (3x3 at
column stride 1 up to 96 channels, or 2 from the phased padded copy up to 32): its chunks are
whole output rows, each row's pixels a segment whose tiles read the (padded) input in place at
every tap (``dense_tile.Taps``, with a pointer per kernel row to its odd columns when phased), and
only a segment under a panel (where a thread's part starts or ends mid-row) is packed. Where
the gemm pays is the compiler's choice (``modelc/ops/conv2d.py``).

``f32_conv2d_im2col[_add][_<activation>]`` computes the same with neither in-place path: it
packs every chunk, and the compiler runs every conv that would (``pack_im2col.packs``) on it.
NOTE: in ``f32_conv2d_gemm`` (36-51K instructions of machine code) cranelift kept the
instance's context in a stack slot through the packed tile's loops and loaded it again before
every load (1035 instructions and 140 stack accesses per 32 steps of the 5x8 tile); in the
10-14K of ``f32_conv2d_im2col`` it stays in a register (900-920 and 6-26:
``bench/tile_code.py``), and those convs ran 5-10% faster (bench/README.md). Splitting the
pointwise and taps paths the same way did not help them: their functions stayed over 20K
instructions and their loops reloaded as often or more.
"""

from __future__ import annotations

import dataclasses
from functools import partial

from ..abi import KernelSpec
from ..pack import PANEL
from ..pack_im2col import ROWS, TAPS_MAX_CHANNELS, TAPS_MIN_WIDTH, TAPS_PHASED_CHANNELS
from ..wasm import Code, FuncType
from . import conv_columns, conv_pointwise, im2col, linear, padded_copy
from .dense_tile import TAP_KERNEL, Taps
from .isa import ISAS, Isa

_LOCALS = ("cg", "og", "first0", "end", "oplane", "iplane", "cols", "image", "group", "xg",
           "wg", "bg", "yg", "rg", "first", "count", "out", "res", "taps", "chunk", "seg_y",
           "seg_end", "stop")


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate conv-as-gemm kernel ``spec`` for ``isa_name``."""
    names = [p.split(":")[0] for p in spec.params]
    c = Code(spec.param_types, names=names)
    isa = ISAS[isa_name]
    for name in _LOCALS:
        c.local("i32", name)
    im2col.declare(c, isa)
    conv_pointwise.declare(c)
    c.get("h", "w").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").set("iplane")
    packs = spec.op == "conv2d_im2col"
    if not packs:
        conv_pointwise.flatten(c)
    c.get("c", "groups").emit("i32.div_u").set("cg")
    c.get("o", "groups").emit("i32.div_u").set("og")
    c.get("oh", "ow").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").set("oplane")
    # the pixels computed: first0 .. end (all of them, or a thread's part)
    c.get("first_bytes").emit("i32.const", 2).emit("i32.shr_u").tee("first0")
    c.get("pixels").emit("i32.add").set("end")
    im2col.sizes(c)
    arg = {"a": c.names["wg"], "wa": c.names["wg"], "w": c.names["cols"], "c": c.names["out"],
           "m": c.names["og"], "k": c.names["steps"], "n": c.names["count"],
           "row_bias": c.names["bg"]}
    if "r" in c.names:
        arg["r"] = c.names["res"]
    f = linear.frame(c, isa_name, arg, spec.activations, mr=ROWS)
    # C's rows are the output planes of the group's channels
    c.get("oplane").set(f.ldc)
    # a pointwise conv's whole panels: B read in place, the (subsampled) input planes its rows
    in_place = dataclasses.replace(f, ldb=c.names["bplane"])
    if packs:
        c.emit("i32.const", 0).set("taps")
        c.get("columns").set("chunk")
    else:
        _taps_sizes(c)
    tap_args = c.names["cg"], c.names["plane"], c.names["tap_dh"]
    taps = (dataclasses.replace(in_place, taps=Taps(*tap_args)),
            dataclasses.replace(in_place, taps=Taps(*tap_args, odd=c.names["odd_bytes"])))
    c.emit("i32.const", 0).set("image")
    with c.loop():
        c.get("image", "n").emit("i32.ge_u").emit("br_if", 1)
        c.emit("i32.const", 0).set("group")
        with c.loop():
            c.get("group", "groups").emit("i32.ge_u").emit("br_if", 1)
            _group(c, f, in_place, None if packs else taps, isa)
            c.get("group").emit("i32.const", 1).emit("i32.add").set("group")
        c.get("image").emit("i32.const", 1).emit("i32.add").set("image")
    return FuncType(spec.param_types, spec.results), c


def _taps_sizes(c: Code) -> None:
    """``taps``: whether B is read in place as the (padded) input (``pack_im2col.taps``), and
    ``chunk``:
    the pixels per chunk, then whole output rows (``columns`` rounded down, one row at
    least)."""
    c.get("kh").emit("i32.const", TAP_KERNEL).emit("i32.eq")
    c.get("kw").emit("i32.const", TAP_KERNEL).emit("i32.eq").emit("i32.and")
    c.get("sw").emit("i32.const", 1).emit("i32.eq").get("phased").emit("i32.or")
    c.emit("i32.and")
    c.get("dw").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    c.get("ow").emit("i32.const", TAPS_MIN_WIDTH).emit("i32.ge_u").emit("i32.and")
    # cg <= (phased ? TAPS_PHASED_CHANNELS : padded ? TAPS_MAX_CHANNELS[0] : [1])
    c.get("cg").emit("i32.const", TAPS_PHASED_CHANNELS)
    c.emit("i32.const", TAPS_MAX_CHANNELS[0]).emit("i32.const", TAPS_MAX_CHANNELS[1])
    c.get("padded").emit("select").get("phased").emit("select").emit("i32.le_u").emit("i32.and")
    c.get("og").emit("i32.const", linear.SPLIT_ROWS).emit("i32.ge_u").emit("i32.and").set("taps")
    c.get("columns").set("chunk")
    c.get("taps")
    with c.if_():
        # chunk = max(columns - columns % ow, ow)
        c.get("columns", "columns", "ow").emit("i32.rem_u").emit("i32.sub").set("chunk")
        c.get("ow", "chunk", "chunk", "ow").emit("i32.lt_u").emit("select").set("chunk")


def _group(c: Code, f: linear._Frame, in_place: linear._Frame,
           taps: tuple[linear._Frame, linear._Frame] | None, isa: Isa) -> None:
    """Pointers to this image's group, then its pixels chunk by chunk: pack, multiply (a
    pointwise conv multiplies its whole panels in place first: ``conv_pointwise``; a conv
    that ``taps`` multiplies its input in place, row by row, nothing packed). Without
    ``taps`` (``f32_conv2d_im2col``) every chunk is packed: neither of those paths is
    generated."""
    # xg = x + (image * c + group * cg) * iplane; wg = weight + group * og * steps * 4
    c.get("x", "image", "c").emit("i32.mul").get("group", "cg").emit("i32.mul")
    c.emit("i32.add").get("iplane").emit("i32.mul").emit("i32.add").set("xg")
    c.get("weight", "group", "og").emit("i32.mul").get("steps").emit("i32.mul")
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").set("wg")
    c.get("bias", "group", "og").emit("i32.mul").emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add").set("bg")
    for out, pointer in (("y", "yg"), ("r", "rg")):
        if out in c.names:
            # base + (image * o + group * og) * oplane
            c.get(out, "image", "o").emit("i32.mul").get("group", "og").emit("i32.mul")
            c.emit("i32.add").get("oplane").emit("i32.mul").emit("i32.add").set(pointer)
    padded_copy.start(c)
    c.get("first0").set("first")
    if taps is not None:
        conv_pointwise.subsample(c, isa)
        conv_pointwise.in_place(c, in_place, lambda frame: _multiply(c, frame))
    with c.loop():
        c.get("first", "end").emit("i32.ge_u").emit("br_if", 1)
        # count = min(chunk - (first % ow if taps), end - first): with taps, up to a row's end
        c.get("chunk", "first", "ow").emit("i32.rem_u").emit("i32.const", 0).get("taps")
        c.emit("select").emit("i32.sub").set("count")
        c.get("end", "first").emit("i32.sub").set("seg_end")
        c.get("count", "seg_end", "count", "seg_end").emit("i32.lt_u").emit("select")
        c.set("count")
        padded_copy.rows(c, f.isa)
        if taps is None:
            c.get("ws").set("cols")
            im2col.pack(c, f.isa)
            _multiply(c, f)
        else:
            _segments(c, f, taps)


def _segments(c: Code, f: linear._Frame, taps: tuple[linear._Frame, linear._Frame]) -> None:
    """The chunk ``first .. first + count`` packed and multiplied (``f``), or, for a conv
    that ``taps``, output row by output row: each row's pixels in the chunk (a segment)
    multiplied with W in place (``taps``: B at the segment's first tap, nothing packed), or
    packed as the others when they are fewer than a panel (a thread's part that starts or
    ends mid-row); ``first`` moves past them."""
    c.get("first", "count").emit("i32.add").set("stop")
    with c.loop():
        c.get("first", "stop").emit("i32.ge_u").emit("br_if", 1)
        # count = (taps ? min(stop, the end of first's output row) : stop) - first
        c.get("first", "ow").emit("i32.div_u").tee("seg_y")
        c.emit("i32.const", 1).emit("i32.add").get("ow").emit("i32.mul").tee("seg_end")
        c.get("stop", "seg_end", "stop").emit("i32.lt_u").emit("select")
        c.get("stop", "taps").emit("select")
        c.get("first").emit("i32.sub").tee("count")
        c.emit("i32.const", PANEL).emit("i32.ge_u").get("taps").emit("i32.and")
        with c.if_():
            # cols = xg + seg_y * sh * row + (first - seg_y * ow) * 4: the first pixel's tap
            c.get("xg", "seg_y", "sh").emit("i32.mul").get("row").emit("i32.mul")
            c.emit("i32.add").get("first", "seg_y", "ow").emit("i32.mul").emit("i32.sub")
            c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").set("cols")
            c.get("phased")
            with c.if_():
                _multiply(c, taps[1])
                c.emit("else")
                _multiply(c, taps[0])
            c.emit("else")
            c.get("ws").set("cols")
            im2col.pack(c, f.isa)
            _multiply(c, f)


def _multiply(c: Code, f: linear._Frame) -> None:
    """The linear driver on the ``count`` columns at ``cols``, C at pixel ``first`` of the
    group's output planes; then ``first`` moves past them."""
    # Y and R arrive moved to pixel first0 (a thread's part), so their offset is relative
    for base, pointer in (("yg", "out"), ("rg", "res")):
        c.get(base, "first", "first0").emit("i32.sub").emit("i32.const", 2)
        c.emit("i32.shl").emit("i32.add").set(pointer)
    # a pointwise conv's last 1-3 pixels (``conv_columns``); taps frames end on their own tile
    narrow = (conv_columns.NARROW, partial(conv_columns.columns, f)) if (
        f.ldb is not None and f.taps is None and f.isa.vector) else None
    linear.row_blocks(f, edge=f.ldb is None, prepacked=True, narrow=narrow)
    c.get("first", "count").emit("i32.add").set("first")
