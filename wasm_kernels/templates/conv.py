"""The conv family: torch's conv2d on NCHW f32 for any stride, padding, dilation and groups,
with the gemm's epilogues (bias, residual add, activation). The weight comes packed by
``wasm_kernels.pack.pack_conv_weight``: per group, blocks of 4 output channels, each block
(kh, kw, cg, 4), so the 4 weights of one block at one tap and input channel are adjacent.

Within one image and group the conv is a sum over taps (i, j) of 1x1 convs of the input
shifted by the tap: a tile of ``rows`` output channels x ``regs`` registers of columns of one
output row keeps its accumulators in locals, loops over the taps, and for each tap runs a
gemm-like k loop over the input channels (``conv_tiles``): per channel it loads the pixel
registers under its columns (contiguous at stride 1, two registers shuffled at stride 2,
lane by lane otherwise) and one register of the block's 4 weights, broadcast lane by lane.
A 1x1 conv with stride 1 and no padding is flattened to one row of h * w pixels.

Each output row first clips the kernel rows to those inside the input, so vertical padding
costs nothing. Its columns are covered by tiles of ``regs * lanes`` columns, the last one
moved left to end at the row's end (it recomputes a few columns; Y must not alias X or R).
A tile is *interior* when every tap of every lane lies inside the input row; otherwise its
pixel registers are masked to zero outside the row (vector ISAs). A tile wider than the
output row stores lane by lane. Masked loads read a few floats before or after the row, maybe
outside X; in an output row where they could leave linear memory, every tile goes column by
column with a bounds check per tap, as the scalar ISA does for every border column.

Tiles are ``MR`` (4) channels x ``NR`` registers for whole blocks of 4 output channels, then
single channels ``WIDE`` registers wide (the last ``og % 4`` channels of a group). A
depthwise conv with kw == 3 and dw == 1 (one input and one output channel per group) runs
its own tile, one channel x ``DEPTHWISE`` registers with a kernel row's 3 taps at once, and
one-register tiles at the borders, so a masked tile masks few registers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..abi import KernelSpec
from ..pack import CONV_BLOCK as BLOCK
from ..wasm import Code, FuncType
from . import conv_row_tile, conv_tiles
from .isa import ISAS, NamedFrame
from .loops import strided_loop

MR, NR, WIDE, DEPTHWISE, DEPTHWISE_STRIDED = 4, 2, 4, 3, 2
"""Tile shapes in registers: MR channel rows x NR registers (8 accumulators, as the gemm's
4x8), one channel x WIDE registers, or a depthwise 3-wide conv's one channel x DEPTHWISE
registers (3 taps of a kernel row at once: 9 pixel and 3 weight registers), or
DEPTHWISE_STRIDED at stride 2 (4 loaded and 6 shuffled registers)."""

ROW_TILE_CHANNELS = 4
"""Input channels per group up to which a conv with kw == 3, dw == 1 runs its blocks of MR
output channels on ``conv_row_tile`` (a kernel row's 3 taps per channel iteration)."""

CHUNK = 128
"""Output columns every channel block runs before the next columns start (a multiple of every
tile's width): the input under them stays in cache across the blocks. Without it, a
pointwise conv (one row of h * w pixels) streamed the whole input once per block."""

# Locals the driver keeps for the whole call (all i32).
_SIZES = ("cg", "og", "plane", "row", "oplane", "orow", "tapw", "block", "dw_bytes", "dh_row",
          "ow_lo", "ow_hi", "depthwise", "rowwise")
_LOOP = ("image", "group", "oy", "oc", "ox", "tx", "last", "ih", "i_lo", "i_hi", "rows_in", "xg",
         "wg", "bg", "yg", "rg", "xrow", "wrow0", "wb", "safe", "chunk", "chunk_end")
# i64 locals: the first and last input rows a tile reads, and the end of memory (bytes).
_WIDE = ("lo_read", "hi_read", "memory_end")
# Locals of one tile's tap loops (all i32).
_TAP = ("t", "j", "col", "iw", "prow", "pj", "pp", "wp", "wend", "kk", "jcol")


@dataclass
class Frame(NamedFrame):
    """The generated function's code, ISA, arguments and named i32 locals."""

    column_offset: list[int]
    """Locals holding ``k * sw * 4``: the byte offset of a tile's k-th column."""
    lane_columns: int
    """A v128 local (vector ISAs): the input columns of a register's lanes, relative to its
    first lane, as floats ``[0, sw, 2 sw, 3 sw]``."""
    width: int
    """A v128 local (vector ISAs): ``w`` as a float in every lane."""


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate conv kernel ``spec`` (``f32_conv2d[_add][_<activation>]``) for ``isa_name``."""
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    v = {name: c.local("i32") for name in _SIZES + _LOOP + _TAP}
    v.update({name: c.local("i64") for name in _WIDE})
    columns = max(NR, WIDE, DEPTHWISE) * isa.lanes
    vectors = (c.local("v128"), c.local("v128")) if isa.vector else (-1, -1)
    f = Frame(c, isa, arg, spec.activations, v,
              [c.local("i32") for _ in range(columns)], *vectors)
    _sizes(f)
    f.c.emit("i32.const", 0)
    f.set("image")
    strided_loop(c, v["image"], 1, arg["n"], lambda: _image(f))
    return FuncType(spec.param_types, spec.results), c


def _flatten_pointwise(f: Frame) -> None:
    """A 1x1 conv with stride 1 and no padding is a gemm over the whole plane: make it one
    row of h * w pixels (oh = 1, ow = h * w), so its tiles never stop at a row's end."""
    c = f.c
    f.get("kh", "kw").emit("i32.or").emit("local.get", f.arg["sh"]).emit("i32.or")
    f.get("sw").emit("i32.or").emit("i32.const", 1).emit("i32.eq")
    f.get("ph", "pw").emit("i32.or").emit("i32.eqz").emit("i32.and").emit("if")
    for rows, columns in (("h", "w"), ("oh", "ow")):
        f.get(rows, columns).emit("i32.mul").emit("local.set", f.arg[columns])
        c.emit("i32.const", 1).emit("local.set", f.arg[rows])
    c.emit("end")


def plane_sizes(f: NamedFrame) -> None:
    """``cg``, ``og``: channels per group; ``row``, ``plane``: bytes of an input row and
    plane; ``orow``, ``oplane``: of an output row and plane."""
    f.get("c", "groups").emit("i32.div_u")
    f.set("cg")
    f.get("o", "groups").emit("i32.div_u")
    f.set("og")
    for row, plane, width, height in (("row", "plane", "w", "h"), ("orow", "oplane", "ow", "oh")):
        f.get(width).emit("i32.const", 2).emit("i32.shl")
        f.set(row)
        f.get(height, row).emit("i32.mul")
        f.set(plane)


def group_planes(f: NamedFrame, pointer: str, base: str, channels: str, per_group: str,
                 plane: str) -> None:
    """``pointer = base + (image * channels + group * per_group) * plane``: the first plane
    of this image's group in a (n, channels, ...) tensor."""
    f.get(base, "image", channels).emit("i32.mul").emit("local.get", f.v["group"])
    f.get(per_group).emit("i32.mul").emit("i32.add").emit("local.get", f.v[plane])
    f.c.emit("i32.mul").emit("i32.add")
    f.set(pointer)


def _sizes(f: Frame) -> None:
    """Derived sizes (bytes), the interior column range and the per-column offsets."""
    c = f.c
    _flatten_pointwise(f)
    plane_sizes(f)
    c.emit("memory.size").emit("i64.extend_i32_u").emit("i64.const", 65536).emit("i64.mul")
    f.set("memory_end")
    f.get("cg").emit("i32.const", 4 * BLOCK).emit("i32.mul")
    f.set("tapw")
    f.get("kh", "kw").emit("i32.mul").emit("local.get", f.v["tapw"]).emit("i32.mul")
    f.set("block")
    f.get("dw").emit("i32.const", 2).emit("i32.shl")
    f.set("dw_bytes")
    f.get("dh", "row").emit("i32.mul")
    f.set("dh_row")
    # ow_lo = min(ceil(pw / sw), ow): the first column whose taps all start inside.
    f.get("pw", "sw").emit("i32.add").emit("i32.const", 1).emit("i32.sub")
    f.get("sw").emit("i32.div_u")
    f.set("ow_lo")
    _min(f, "ow_lo", "ow")
    # ow_hi = max(min(span / sw + 1, ow), ow_lo) with span = w - 1 + pw - (kw - 1) * dw,
    # or ow_lo when span < 0: the end of the columns whose taps all end inside.
    f.get("w", "pw").emit("i32.add").emit("i32.const", 1).emit("i32.sub")
    f.get("kw").emit("i32.const", 1).emit("i32.sub").emit("local.get", f.arg["dw"])
    c.emit("i32.mul").emit("i32.sub")
    f.set("ow_hi")
    f.get("ow_hi", "sw").emit("i32.div_s").emit("i32.const", 1).emit("i32.add")
    c.emit("i32.const", 0).emit("local.get", f.v["ow_hi"]).emit("i32.const", 0)
    c.emit("i32.ge_s").emit("select")
    f.set("ow_hi")
    _min(f, "ow_hi", "ow")
    _max(f, "ow_hi", "ow_lo")
    # depthwise = cg == 1 && og == 1 && kw == 3 && dw == 1
    f.get("cg").emit("i32.const", 1).emit("i32.eq")
    f.get("og").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    f.get("kw").emit("i32.const", 3).emit("i32.eq").emit("i32.and")
    f.get("dw").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    f.set("depthwise")
    # rowwise = cg <= ROW_TILE_CHANNELS && kw == 3 && dw == 1 (conv_row_tile)
    f.get("cg").emit("i32.const", ROW_TILE_CHANNELS).emit("i32.le_u")
    f.get("kw").emit("i32.const", conv_row_tile.TAPS).emit("i32.eq").emit("i32.and")
    f.get("dw").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    f.set("rowwise")
    for k, local in enumerate(f.column_offset):
        f.get("sw").emit("i32.const", 4 * k).emit("i32.mul").emit("local.set", local)
    if f.isa.vector:
        c.emit("v128.const", b"".join(k.to_bytes(4, "little") for k in range(4)))
        f.get("sw").emit("i32x4.splat").emit("i32x4.mul").emit("f32x4.convert_i32x4_s")
        c.emit("local.set", f.lane_columns)
        f.get("w").emit("f32.convert_i32_s").emit("f32x4.splat").emit("local.set", f.width)


def _min(f: Frame, name: str, other: str) -> None:
    """``name = min(name, other)`` (unsigned)."""
    f.get(name, other, name, other).emit("i32.lt_u").emit("select")
    f.set(name)


def _max(f: Frame, name: str, other: str) -> None:
    """``name = max(name, other)`` (unsigned)."""
    f.get(name, other, name, other).emit("i32.gt_u").emit("select")
    f.set(name)


def _image(f: Frame) -> None:
    f.c.emit("i32.const", 0)
    f.set("group")
    strided_loop(f.c, f.v["group"], 1, f.arg["groups"], lambda: _group(f))


def _group(f: Frame) -> None:
    """Pointers to this image and group, then every output row."""
    c = f.c
    group_planes(f, "xg", "x", "c", "cg", "plane")
    # wg = weight + group * ceil(og / BLOCK) * block
    f.get("weight", "group", "og").emit("i32.const", BLOCK - 1).emit("i32.add")
    c.emit("i32.const", BLOCK.bit_length() - 1).emit("i32.shr_u").emit("i32.mul")
    f.get("block").emit("i32.mul").emit("i32.add")
    f.set("wg")
    f.get("bias", "group", "og").emit("i32.mul").emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add")
    f.set("bg")
    for out, name in (("y", "yg"), ("r", "rg")):
        if out in f.arg:
            group_planes(f, name, out, "o", "og", "oplane")
    c.emit("i32.const", 0)
    f.set("oy")
    strided_loop(c, f.v["oy"], 1, f.arg["oh"], lambda: _output_row(f))


def _output_row(f: Frame) -> None:
    """Clip the kernel rows to the input, then MR-channel tiles and single-channel tiles."""
    c = f.c
    # ih = oy * sh - ph (may be negative)
    f.get("oy", "sh").emit("i32.mul").emit("local.get", f.arg["ph"]).emit("i32.sub")
    f.set("ih")
    # i_lo = min(ih < 0 ? ceil(-ih / dh) : 0, kh)
    f.get("dh").emit("i32.const", 1).emit("i32.sub").emit("local.get", f.v["ih"])
    c.emit("i32.sub").emit("local.get", f.arg["dh"]).emit("i32.div_u")
    c.emit("i32.const", 0).emit("local.get", f.v["ih"]).emit("i32.const", 0)
    c.emit("i32.lt_s").emit("select")
    f.set("i_lo")
    _min(f, "i_lo", "kh")
    # i_hi = max(h - 1 - ih < 0 ? 0 : min((h - 1 - ih) / dh + 1, kh), i_lo)
    f.get("h").emit("i32.const", 1).emit("i32.sub").emit("local.get", f.v["ih"])
    c.emit("i32.sub")
    f.set("i_hi")
    f.get("i_hi", "dh").emit("i32.div_s").emit("i32.const", 1).emit("i32.add")
    c.emit("i32.const", 0).emit("local.get", f.v["i_hi"]).emit("i32.const", 0)
    c.emit("i32.ge_s").emit("select")
    f.set("i_hi")
    _min(f, "i_hi", "kh")
    _max(f, "i_hi", "i_lo")
    f.get("i_hi", "i_lo").emit("i32.sub")
    f.set("rows_in")
    # xrow = xg + (ih + i_lo * dh) * row: the first kernel row inside the input
    f.get("xg", "ih", "i_lo", "dh").emit("i32.mul").emit("i32.add")
    f.get("row").emit("i32.mul").emit("i32.add")
    f.set("xrow")
    # wrow0 = i_lo * kw * tapw: the weights of the first kernel row inside
    f.get("i_lo", "kw").emit("i32.mul").emit("local.get", f.v["tapw"]).emit("i32.mul")
    f.set("wrow0")
    # lo_read, hi_read: where the first and the last input row read start
    f.get("xrow").emit("i64.extend_i32_u")
    f.set("lo_read")
    f.get("cg").emit("i32.const", 1).emit("i32.sub").emit("local.get", f.v["plane"])
    c.emit("i32.mul")
    f.get("rows_in").emit("i32.const", 1).emit("i32.sub").emit("local.get", f.v["dh_row"])
    c.emit("i32.mul").emit("i32.add").emit("i64.extend_i32_s").emit("local.get", f.v["lo_read"])
    c.emit("i64.add")
    f.set("hi_read")
    if f.isa.vector:
        _safe(f)
        f.get("sw").emit("i32.const", 1).emit("i32.eq").emit("if")
        _channel_tiles(f, "unit")
        c.emit("else")
        f.get("sw").emit("i32.const", 2).emit("i32.eq").emit("if")
        _channel_tiles(f, "pair")
        c.emit("else")
        _channel_tiles(f, "gather")
        c.emit("end").emit("end")
    else:
        _channel_tiles(f, "gather")


def _channel_tiles(f: Frame, mode: str) -> None:
    """A depthwise 3-wide conv's one channel, or blocks of MR output channels then single
    channels. Gathered loads (stride 3 and more, rare) have neither the depthwise tile nor
    masked tiles: their border columns go one at a time."""
    c = f.c
    c.emit("i32.const", 0)
    f.set("oc")

    def chunk() -> None:
        # chunk_end = min(chunk + CHUNK, ow)
        f.get("chunk").emit("i32.const", CHUNK).emit("i32.add")
        f.set("chunk_end")
        _min(f, "chunk_end", "ow")
        c.emit("i32.const", 0)
        f.set("oc")
        strided_loop(c, f.v["oc"], MR, f.v["og"], block_tiles)
        strided_loop(c, f.v["oc"], 1, f.v["og"],
                     lambda: _columns(f, 1, WIDE, mode, conv_tiles.vector_tile))

    def block_tiles() -> None:
        if mode == "gather":
            _columns(f, MR, NR, mode, conv_tiles.vector_tile)
            return
        f.get("rowwise").emit("if")
        _columns(f, MR, NR, mode, conv_row_tile.row_tile)
        c.emit("else")
        _columns(f, MR, NR, mode, conv_tiles.vector_tile)
        c.emit("end")

    def blocks() -> None:
        c.emit("i32.const", 0)
        f.set("chunk")
        c.emit("block").emit("loop")
        f.get("chunk", "ow").emit("i32.ge_u").emit("br_if", 1)
        chunk()
        f.add("chunk", CHUNK)
        c.emit("br", 0).emit("end").emit("end")

    if mode == "gather":
        blocks()
        return
    f.get("depthwise").emit("if")
    _columns(f, 1, DEPTHWISE_STRIDED if mode == "pair" else DEPTHWISE, mode,
             conv_tiles.depthwise_tile, narrow_borders=True)
    c.emit("else")
    blocks()
    c.emit("end")


def _columns(f: Frame, rows: int, regs: int, mode: str, kernel: conv_tiles.Tile,
             narrow_borders: bool = False) -> None:
    """The columns ``chunk .. chunk_end`` of the output row in tiles of ``regs`` registers,
    the last moved left to end at ``ow``; or, with ``narrow_borders``, the whole row: one-
    register tiles over the left border columns, tiles of ``regs`` registers while they fit
    in the interior, then one-register tiles to the end (a masked tile then masks few
    registers)."""
    c, lanes = f.c, f.isa.lanes
    # wb = wg + (oc / BLOCK) * block + (oc % BLOCK) * 4 + wrow0
    f.get("wg", "oc").emit("i32.const", BLOCK.bit_length() - 1).emit("i32.shr_u")
    f.get("block").emit("i32.mul").emit("i32.add")
    f.get("oc").emit("i32.const", BLOCK - 1).emit("i32.and").emit("i32.const", 2)
    c.emit("i32.shl").emit("i32.add").emit("local.get", f.v["wrow0"]).emit("i32.add")
    f.set("wb")
    if narrow_borders:
        c.emit("i32.const", 0)
    else:
        f.get("chunk")
    f.set("ox")

    def tiles(end: str, tile_regs: int) -> None:
        """Tiles from ox while ox < end, each moved left to end at ow at the latest."""
        width = tile_regs * lanes
        # last = max(ow - width, 0)
        f.get("ow").emit("i32.const", width).emit("i32.sub")
        c.emit("i32.const", 0).emit("local.get", f.arg["ow"]).emit("i32.const", width)
        c.emit("i32.gt_u").emit("select")
        f.set("last")
        c.emit("block").emit("loop")
        f.get("ox", end).emit("i32.ge_u").emit("br_if", 1)
        f.get("ox", "last", "ox", "last").emit("i32.lt_u").emit("select")
        f.set("tx")
        _tile(f, rows, tile_regs, mode, kernel)
        f.add("ox", width)
        c.emit("br", 0).emit("end").emit("end")

    if not narrow_borders:
        tiles("chunk_end", regs)
        return
    tiles("ow_lo", 1)
    c.emit("block").emit("loop")
    f.get("ox").emit("i32.const", regs * lanes).emit("i32.add").emit("local.get", f.v["ow_hi"])
    c.emit("i32.gt_u").emit("br_if", 1)
    f.get("ox")
    f.set("tx")
    _tile(f, rows, regs, mode, kernel)
    f.add("ox", regs * lanes)
    c.emit("br", 0).emit("end").emit("end")
    tiles("ow", 1)


def _tile(f: Frame, rows: int, regs: int, mode: str, kernel: conv_tiles.Tile) -> None:
    """The tile at column ``tx``: interior, masked, or column by column."""
    c, isa, width = f.c, f.isa, regs * f.isa.lanes
    # interior = tx >= ow_lo && tx + width <= ow_hi
    f.get("tx", "ow_lo").emit("i32.ge_u")
    f.get("tx").emit("i32.const", width).emit("i32.add").emit("local.get", f.v["ow_hi"])
    c.emit("i32.le_u").emit("i32.and")
    if isa.vector:
        f.get("safe").emit("i32.and")
    c.emit("if")
    kernel(f, rows, regs, mode, False)
    c.emit("else")
    if isa.vector and mode != "gather":
        f.get("safe").emit("if")
        kernel(f, rows, regs, mode, True)
        c.emit("else")
    conv_tiles.column_tiles(f, rows, width)
    if isa.vector and mode != "gather":
        c.emit("end")
    c.emit("end")


def _safe(f: Frame) -> None:
    """``safe`` = every load of a vector tile in this output row stays inside linear memory
    (masked lanes may read outside the row, even outside X; a stride-2 register reads one
    float past its last lane, the depthwise tile's register after its last one two floats
    past its last tap, the row tile's at stride 2 three, the most the bound allows). A tile
    starts at tx >= 0 and ends before max(ow, widest), so: rows_in == 0, or lo_read - pw * 4
    >= 0 and hi_read + ((max(ow, widest) - 1) * sw - pw + (kw - 1) * dw + 4) * 4 <=
    memory_end."""
    c = f.c
    widest = max(NR, WIDE, DEPTHWISE) * f.isa.lanes
    f.get("rows_in").emit("i32.eqz")
    f.get("lo_read").emit("i32.const", 0).emit("local.get", f.arg["pw"]).emit("i32.const", 2)
    c.emit("i32.shl").emit("i32.sub").emit("i64.extend_i32_s").emit("i64.add")
    c.emit("i64.const", 0).emit("i64.ge_s")
    f.get("ow").emit("i32.const", widest).emit("local.get", f.arg["ow"])
    c.emit("i32.const", widest).emit("i32.gt_u").emit("select")
    c.emit("i32.const", 1).emit("i32.sub").emit("local.get", f.arg["sw"])
    c.emit("i32.mul").emit("local.get", f.arg["pw"]).emit("i32.sub")
    f.get("kw").emit("i32.const", 1).emit("i32.sub").emit("local.get", f.arg["dw"])
    c.emit("i32.mul").emit("i32.add").emit("i32.const", 4).emit("i32.add")
    c.emit("i32.const", 2).emit("i32.shl").emit("i64.extend_i32_s")
    f.get("hi_read").emit("i64.add")
    f.get("memory_end").emit("i64.le_s").emit("i32.and").emit("i32.or")
    f.set("safe")
