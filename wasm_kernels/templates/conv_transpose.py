"""The transposed-conv family: torch's conv_transpose2d on NCHW f32 for any stride, padding,
output padding, dilation and groups, with a bias.

Each input pixel scatters ``x[c, iy, ix] * weight[c, o, i, j]`` to output pixel
``(iy * sh - ph + i * dh, ix * sw - pw + j * dw)``. For one tap (i, j) and one input row
that is a gemm, T(og, ix) = W_ij(og, cg) @ X(cg, ix), whose columns land ``sw`` output
columns apart, so the kernel runs it register-blocked like the gemm micro-kernel and adds
each tile into the output straight away: no column matrix is ever stored. The weight is
packed (groups, cg, kh, kw, og), so one step of the channel loop reads ``rows`` adjacent
weights and ``regs`` registers of adjacent input pixels.

The output starts as the bias. Taps whose output row falls outside it are skipped, and for
each kernel column the input columns are clipped to those that land inside, so padding,
output padding and cropping cost nothing. A tile adds its registers into the output with one
vector load and store when ``sw == 1``, float by float otherwise.

Tiles are ``MR`` output channels x ``NR`` registers (the gemm's 4x8), then single channels
``WIDE`` registers wide, then single columns. Depthwise transposes without dilation, where a
tile would add only 4 products per register into the output per tap, take the gather path
of ``conv_transpose_gather`` instead.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from . import conv_transpose_gather as gather
from .conv import group_planes, plane_sizes
from .isa import ISAS, Isa, NamedFrame
from .loops import strided_loop

MR, NR, WIDE = 4, 2, 4
"""Tile shapes in registers: MR channel rows x NR registers, or one channel x WIDE."""

# i32 locals: sizes kept for the whole call, then the loop state.
_SIZES = ("cg", "og", "plane", "row", "oplane", "orow", "wstride", "sw_bytes")
_LOOP = ("image", "group", "xg", "wg", "yg", "oc", "p", "end", "iy", "i", "j", "oy", "ix",
         "ix_lo", "ix_hi", "xrow", "tap", "yrow", "ch")


@dataclass
class Frame(NamedFrame):
    """The generated function's code, ISA, arguments and named i32 locals."""

    column_offset: list[int]
    """Locals holding ``k * sw * 4``: the byte offset of a tile's k-th output column."""


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate ``f32_conv_transpose2d`` for ``isa_name``."""
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    v = {name: c.local("i32") for name in _SIZES + _LOOP + gather.LOCALS}
    f = Frame(c, isa, arg, (), v, [c.local("i32") for _ in range(max(NR, WIDE) * isa.lanes)])
    _sizes(f)
    f.count("image", "n", 1, lambda: f.count("group", "groups", 1, lambda: _group(f)))
    return FuncType(spec.param_types, spec.results), c


def _sizes(f: Frame) -> None:
    """Channels per group, byte sizes of planes and rows, and the column offsets."""
    c = f.c
    plane_sizes(f)
    f.get("kh", "kw").emit("i32.mul").emit("local.get", f.v["og"]).emit("i32.mul")
    c.emit("i32.const", 2).emit("i32.shl")
    f.set("wstride")
    f.get("sw").emit("i32.const", 2).emit("i32.shl")
    f.set("sw_bytes")
    for k, local in enumerate(f.column_offset):
        f.get("sw_bytes").emit("i32.const", k).emit("i32.mul").emit("local.set", local)


def _group(f: Frame) -> None:
    """Pointers to this image and group, the bias fill, then every input row and tap."""
    c = f.c
    group_planes(f, "xg", "x", "c", "cg", "plane")
    # wg = weight + group * cg * wstride
    f.get("weight", "group", "cg").emit("i32.mul").emit("local.get", f.v["wstride"])
    c.emit("i32.mul").emit("i32.add")
    f.set("wg")
    group_planes(f, "yg", "y", "o", "og", "oplane")
    # depthwise without dilation: the gather path
    f.get("cg").emit("i32.const", 1).emit("i32.eq")
    f.get("dh").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    f.get("dw").emit("i32.const", 1).emit("i32.eq").emit("i32.and").emit("if")
    gather.emit_group(f)
    c.emit("else")
    f.count("oc", "og", 1, lambda: _fill_bias(f))
    f.count("iy", "h", 1, lambda: f.count("i", "kh", 1, lambda: _kernel_row(f)))
    c.emit("end")


def _fill_bias(f: Frame) -> None:
    """Output plane ``oc`` of the group = its bias, a register at a time, then floats."""
    c, isa = f.c, f.isa
    bias = c.local(isa.valtype)
    # p = yg + oc * oplane; end = p + oplane
    f.get("yg", "oc", "oplane").emit("i32.mul").emit("i32.add")
    c.emit("local.tee", f.v["p"]).emit("local.get", f.v["oplane"]).emit("i32.add")
    f.set("end")
    # bias[group * og + oc]
    f.get("bias", "group", "og").emit("i32.mul").emit("local.get", f.v["oc"]).emit("i32.add")
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    isa.load_splat(c)
    c.emit("local.set", bias)

    def store(scalar: bool) -> None:
        f.get("p").emit("local.get", bias)
        if scalar and isa.vector:
            c.emit("f32x4.extract_lane", 0)
        c.emit("f32.store" if scalar else "v128.store", 2)

    if isa.vector:
        strided_loop(c, f.v["p"], 4 * isa.lanes, f.v["end"], lambda: store(False))
    strided_loop(c, f.v["p"], 4, f.v["end"], lambda: store(True))


def _kernel_row(f: Frame) -> None:
    """Kernel row ``i`` of input row ``iy``: skipped unless its output row is inside."""
    c = f.c
    # oy = iy * sh - ph + i * dh
    f.get("iy", "sh").emit("i32.mul").emit("local.get", f.arg["ph"]).emit("i32.sub")
    f.get("i", "dh").emit("i32.mul").emit("i32.add").emit("local.tee", f.v["oy"])
    f.get("oh").emit("i32.lt_u").emit("if")
    # xrow = xg + iy * row
    f.get("xg", "iy", "row").emit("i32.mul").emit("i32.add")
    f.set("xrow")
    f.count("j", "kw", 1, lambda: _tap(f))
    c.emit("end")


def _zero_unless(f: Frame, name: str, comparison: str) -> None:
    """``name = (the i32 on the stack) if name <comparison> 0 else 0`` (signed)."""
    c = f.c
    c.emit("i32.const", 0).emit("local.get", f.v[name]).emit("i32.const", 0)
    c.emit(comparison).emit("select")
    f.set(name)


def _tap(f: Frame) -> None:
    """Tap (i, j): clip the input columns to those landing inside the output row, then
    MR-channel tiles and single-channel tiles over them."""
    c = f.c
    # ix_lo = ceil((pw - j * dw) / sw) when positive, else 0
    f.get("pw", "j", "dw").emit("i32.mul").emit("i32.sub")
    f.set("ix_lo")
    f.get("ix_lo", "sw").emit("i32.add").emit("i32.const", 1).emit("i32.sub")
    f.get("sw").emit("i32.div_u")
    _zero_unless(f, "ix_lo", "i32.gt_s")
    # ix_hi = (ow - 1 + pw - j * dw) / sw + 1 when that is >= 0, else 0
    f.get("ow", "pw").emit("i32.add").emit("i32.const", 1).emit("i32.sub")
    f.get("j", "dw").emit("i32.mul").emit("i32.sub")
    f.set("ix_hi")
    f.get("ix_hi", "sw").emit("i32.div_u").emit("i32.const", 1).emit("i32.add")
    _zero_unless(f, "ix_hi", "i32.ge_s")
    _clamp_columns(f)
    # tap = wg + (i * kw + j) * og * 4: the weights of channel 0 for this tap
    f.get("wg", "i", "kw").emit("i32.mul").emit("local.get", f.v["j"]).emit("i32.add")
    f.get("og").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    f.set("tap")
    # yrow = yg + oy * orow + (j * dw - pw) * 4: where input column 0 would land
    f.get("yg", "oy", "orow").emit("i32.mul").emit("i32.add")
    f.get("j", "dw").emit("i32.mul").emit("local.get", f.arg["pw"]).emit("i32.sub")
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    f.set("yrow")
    f.count("oc", "og", MR, lambda: _columns(f, MR, NR))
    strided_loop(c, f.v["oc"], 1, f.v["og"], lambda: _columns(f, 1, WIDE))


def _clamp_columns(f: Frame) -> None:
    """``ix_lo = min(ix_lo, w)``, ``ix_hi = max(min(ix_hi, w), ix_lo)``."""
    f.get("ix_lo", "w", "ix_lo", "w").emit("i32.lt_u").emit("select")
    f.set("ix_lo")
    f.get("ix_hi", "w", "ix_hi", "w").emit("i32.lt_u").emit("select")
    f.set("ix_hi")
    f.get("ix_hi", "ix_lo", "ix_hi", "ix_lo").emit("i32.gt_u").emit("select")
    f.set("ix_hi")


def _columns(f: Frame, rows: int, regs: int) -> None:
    """Channels ``oc:oc+rows`` over the clipped columns: vector tiles, then single ones."""
    c, isa = f.c, f.isa
    f.get("ix_lo")
    f.set("ix")
    for width in dict.fromkeys((regs, 1)):
        strided_loop(c, f.v["ix"], width * isa.lanes, f.v["ix_hi"],
                     functools.partial(_tile, f, isa, rows, width))
    if isa.vector:
        strided_loop(c, f.v["ix"], 1, f.v["ix_hi"],
                     functools.partial(_tile, f, ISAS["scalar"], rows, 1))


def _tile(f: Frame, isa: Isa, rows: int, regs: int) -> None:
    """Y[oc:oc+rows, oy, cols of ix:ix+regs*lanes] += W_ij[:, oc:oc+rows].T @ X[:, iy, ...]."""
    c = f.c
    acc = [[c.local(isa.valtype) for _ in range(regs)] for _ in range(rows)]
    pixels = [c.local(isa.valtype) for _ in range(regs)]
    weight = c.local(isa.valtype)
    pa, px = c.local("i32"), c.local("i32")
    for row in acc:
        for local in row:
            isa.const(c, 0.0)
            c.emit("local.set", local)
    f.get("tap", "oc").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    c.emit("local.set", pa)
    f.get("xrow", "ix").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    c.emit("local.set", px)

    def channel() -> None:
        for reg in range(regs):
            c.emit("local.get", px)
            isa.load(c, 4 * isa.lanes * reg)
            c.emit("local.set", pixels[reg])
        for r in range(rows):
            c.emit("local.get", pa)
            isa.load_splat(c, 4 * r)
            c.emit("local.set", weight)
            for reg in range(regs):
                c.emit("local.get", weight).emit("local.get", pixels[reg])
                isa.madd_into(c, acc[r][reg])
        for pointer, step in ((pa, "wstride"), (px, "plane")):
            c.emit("local.get", pointer)
            f.get(step).emit("i32.add").emit("local.set", pointer)

    f.count("ch", "cg", 1, channel)
    _accumulate(f, isa, rows, regs, acc)


def _accumulate(f: Frame, isa: Isa, rows: int, regs: int, acc: list[list[int]]) -> None:
    """Add the tile into the output: row r at yrow + (oc + r) * oplane + ix * sw * 4."""
    c = f.c
    base = c.local("i32")
    f.get("yrow", "ix", "sw_bytes").emit("i32.mul").emit("i32.add")
    f.get("oc", "oplane").emit("i32.mul").emit("i32.add")
    c.emit("local.set", base)

    def contiguous() -> None:
        for r in range(rows):
            for reg in range(regs):
                offset = 4 * isa.lanes * reg
                c.emit("local.get", base).emit("local.get", base)
                isa.load(c, offset)
                c.emit("local.get", acc[r][reg])
                isa.op(c, "add")
                isa.store(c, offset)
            _next_row(f, base)

    def lane_by_lane() -> None:
        for r in range(rows):
            for reg in range(regs):
                for lane in range(isa.lanes):
                    c.emit("local.get", base)
                    c.emit("local.get", f.column_offset[reg * isa.lanes + lane])
                    c.emit("i32.add").emit("local.tee", f.v["p"]).emit("local.get", f.v["p"])
                    c.emit("f32.load", 2).emit("local.get", acc[r][reg])
                    if isa.vector:
                        c.emit("f32x4.extract_lane", lane)
                    c.emit("f32.add").emit("f32.store", 2)
            _next_row(f, base)

    if not isa.vector:
        lane_by_lane()
        return
    f.get("sw").emit("i32.const", 1).emit("i32.eq").emit("if")
    contiguous()
    c.emit("else")
    lane_by_lane()
    c.emit("end")


def _next_row(f: Frame, base: int) -> None:
    f.c.emit("local.get", base)
    f.get("oplane").emit("i32.add").emit("local.set", base)
