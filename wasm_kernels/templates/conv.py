"""The conv family: torch's conv2d on NCHW f32 for any stride, padding, dilation and groups,
with the gemm's epilogues (bias, residual add, activation).

Within one image and group the conv is an implicit gemm, Y(og, oh * ow) = W(og, cg * kh *
kw) @ cols, where the column of output pixel (oy, ox) is the input window under it and is
never materialised. A register-blocked tile computes ``rows`` output channels x ``regs``
registers of output columns of one output row: per tap it loads the input pixels under its
columns (one load per register for stride 1, lane by lane otherwise), broadcasts one weight
per channel row, and multiply-adds, exactly as the gemm micro-kernel does per step of k.

Each output row first clips the kernel rows to those inside the input, so vertical padding
costs nothing. Its columns split into an interior, where every tap of every lane is inside
the input, and the border columns on either side (plus the interior's remainder), computed
one column at a time with a bounds check per tap. Interior tiles use one of four tap loops,
chosen once per output row:

- ``pointwise`` (one kernel row inside the input, kw == 1, stride 1: 1x1 convs): the k loop
  of a gemm whose B is the image itself, one step per input channel;
- ``three`` (kw == 3, dw == sw == 1): three taps per kernel row with immediate offsets;
- ``strided``: any kw and dilation, contiguous pixels (sw == 1);
- ``gathered``: any kw, dilation and stride, the pixels of a register loaded lane by lane.

Tiles are ``MR`` output channels x ``NR`` registers (the gemm's 4x8), then single channels
``WIDE`` registers wide. A depthwise conv (one output channel per group) runs only the
single-channel tiles: 16 columns of one channel per tile, every weight loaded once per tile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from . import activations
from .isa import ISAS, Isa, KernelFrame
from .loops import strided_loop

MR, NR, WIDE = 4, 2, 4
"""Tile shapes in registers: MR channel rows x NR registers (8 accumulators, as the gemm's
4x8), or one channel x WIDE registers (4 accumulators, 4 pixel registers)."""

MODES = ("pointwise", "three", "strided", "gathered")

# Locals the driver keeps for the whole call (all i32).
_SIZES = ("cg", "og", "tap_bytes", "plane", "row", "oplane", "orow", "wrow", "dw_bytes", "dh_row",
          "ow_lo", "ow_hi", "three")
_LOOP = ("image", "group", "oy", "oc", "ox", "ch", "t", "j", "i_lo", "i_hi", "skip", "ih",
         "iw", "xg", "wg", "bg", "yg", "rg", "xrow", "pi", "pj", "pointwise")


@dataclass
class _Frame(KernelFrame):
    """The generated function's code, ISA, arguments and named i32 locals."""

    v: dict[str, int]
    column_offset: list[int]
    """Locals holding ``k * sw * 4``: the byte offset of a tile's k-th column."""

    def get(self, *names: str) -> Code:
        """Push each named local or argument."""
        for name in names:
            self.c.emit("local.get", self.v[name] if name in self.v else self.arg[name])
        return self.c

    def set(self, name: str) -> None:
        self.c.emit("local.set", self.v[name])


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate conv kernel ``spec`` (``f32_conv2d[_add][_<activation>]``) for ``isa_name``."""
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    names = _SIZES + _LOOP
    v = {name: c.local("i32") for name in names}
    columns = max(NR, WIDE) * isa.lanes
    f = _Frame(c, isa, arg, activations.epilogue_of(spec), v,
               [c.local("i32") for _ in range(columns)])
    _sizes(f)
    f.c.emit("i32.const", 0)
    f.set("image")
    strided_loop(c, v["image"], 1, arg["n"], lambda: _image(f))
    return FuncType(spec.param_types, spec.results), c


def _sizes(f: _Frame) -> None:
    """Derived sizes (bytes), the interior column range and the per-column offsets."""
    c = f.c
    f.get("c", "groups").emit("i32.div_u")
    f.set("cg")
    f.get("o", "groups").emit("i32.div_u")
    f.set("og")
    f.get("w").emit("i32.const", 2).emit("i32.shl")
    f.set("row")
    f.get("h", "row").emit("i32.mul")
    f.set("plane")
    f.get("ow").emit("i32.const", 2).emit("i32.shl")
    f.set("orow")
    f.get("oh", "orow").emit("i32.mul")
    f.set("oplane")
    f.get("cg", "kh").emit("i32.mul").emit("local.get", f.arg["kw"]).emit("i32.mul")
    c.emit("i32.const", 2).emit("i32.shl")
    f.set("wrow")
    f.get("kh", "kw").emit("i32.mul").emit("i32.const", 2).emit("i32.shl")
    f.set("tap_bytes")
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
    # three = kw == 3 && dw == 1 && sw == 1
    f.get("kw").emit("i32.const", 3).emit("i32.eq")
    f.get("dw").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    f.get("sw").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    f.set("three")
    for k, local in enumerate(f.column_offset):
        f.get("sw").emit("i32.const", 4 * k).emit("i32.mul").emit("local.set", local)


def _min(f: _Frame, name: str, other: str) -> None:
    """``name = min(name, other)`` (unsigned)."""
    f.get(name, other, name, other).emit("i32.lt_u").emit("select")
    f.set(name)


def _max(f: _Frame, name: str, other: str) -> None:
    """``name = max(name, other)`` (unsigned)."""
    f.get(name, other, name, other).emit("i32.gt_u").emit("select")
    f.set(name)


def _image(f: _Frame) -> None:
    f.c.emit("i32.const", 0)
    f.set("group")
    strided_loop(f.c, f.v["group"], 1, f.arg["groups"], lambda: _group(f))


def _group(f: _Frame) -> None:
    """Pointers to this image and group, then every output row."""
    c = f.c
    # xg = x + (image * c + group * cg) * plane
    f.get("x", "image", "c").emit("i32.mul").emit("local.get", f.v["group"])
    f.get("cg").emit("i32.mul").emit("i32.add").emit("local.get", f.v["plane"])
    c.emit("i32.mul").emit("i32.add")
    f.set("xg")
    f.get("weight", "group", "og").emit("i32.mul").emit("local.get", f.v["wrow"])
    c.emit("i32.mul").emit("i32.add")
    f.set("wg")
    f.get("bias", "group", "og").emit("i32.mul").emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add")
    f.set("bg")
    for out, name in (("y", "yg"), ("r", "rg")):
        if out in f.arg:
            f.get(out, "image", "o").emit("i32.mul").emit("local.get", f.v["group"])
            f.get("og").emit("i32.mul").emit("i32.add").emit("local.get", f.v["oplane"])
            c.emit("i32.mul").emit("i32.add")
            f.set(name)
    c.emit("i32.const", 0)
    f.set("oy")
    strided_loop(c, f.v["oy"], 1, f.arg["oh"], lambda: _output_row(f))


def _output_row(f: _Frame) -> None:
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
    # skip = (kh - (i_hi - i_lo)) * kw * 4: weight bytes of the clipped kernel rows
    f.get("kh", "i_hi").emit("i32.sub").emit("local.get", f.v["i_lo"]).emit("i32.add")
    f.get("kw").emit("i32.mul").emit("i32.const", 2).emit("i32.shl")
    f.set("skip")
    # xrow = xg + (ih + i_lo * dh) * row: the first kernel row inside the input
    f.get("xg", "ih", "i_lo", "dh").emit("i32.mul").emit("i32.add")
    f.get("row").emit("i32.mul").emit("i32.add")
    f.set("xrow")
    # pointwise = one kernel row inside, kw == 1, sw == 1
    f.get("i_hi", "i_lo").emit("i32.sub").emit("i32.const", 1).emit("i32.eq")
    f.get("kw").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    f.get("sw").emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    f.set("pointwise")
    c.emit("i32.const", 0)
    f.set("oc")
    strided_loop(c, f.v["oc"], MR, f.v["og"], lambda: _columns(f, MR, NR))
    strided_loop(c, f.v["oc"], 1, f.v["og"], lambda: _columns(f, 1, WIDE))


def _columns(f: _Frame, rows: int, regs: int) -> None:
    """One output row of ``rows`` channels: left border, interior, remainder and right."""
    c, isa, scalar = f.c, f.isa, ISAS["scalar"]
    c.emit("i32.const", 0)
    f.set("ox")
    strided_loop(c, f.v["ox"], 1, f.v["ow_lo"], lambda: _tile(f, scalar, rows, 1, "checked"))

    def interior(mode: str) -> None:
        for width in dict.fromkeys((regs, 1)):
            strided_loop(c, f.v["ox"], width * isa.lanes, f.v["ow_hi"],
                         lambda width=width: _tile(f, isa, rows, width, mode))

    f.get("pointwise").emit("if")
    interior("pointwise")
    c.emit("else")
    f.get("three").emit("if")
    interior("three")
    c.emit("else")
    f.get("sw").emit("i32.const", 1).emit("i32.eq").emit("if")
    interior("strided")
    c.emit("else")
    interior("gathered")
    c.emit("end").emit("end").emit("end")
    strided_loop(c, f.v["ox"], 1, f.arg["ow"], lambda: _tile(f, scalar, rows, 1, "checked"))


def _tile(f: _Frame, isa: Isa, rows: int, regs: int, mode: str) -> None:
    """Y[oc:oc+rows, oy, ox:ox+regs*lanes] = epilogue(bias + sum over taps)."""
    c, width = f.c, 4 * isa.lanes
    acc = [[c.local(isa.valtype) for _ in range(regs)] for _ in range(rows)]
    pixels = [c.local(isa.valtype) for _ in range(regs)]
    weight = c.local(isa.valtype)
    pa = [c.local("i32") for _ in range(rows)]
    pb = c.local("i32")
    for r in range(rows):
        # pa[r] = wg + (oc + r) * wrow + i_lo * kw * 4;  acc[r][:] = bias[oc + r]
        f.get("wg", "oc").emit("i32.const", r).emit("i32.add").emit("local.get", f.v["wrow"])
        c.emit("i32.mul").emit("i32.add").emit("local.get", f.v["i_lo"])
        f.get("kw").emit("i32.mul").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        c.emit("local.set", pa[r])
        f.get("bg", "oc").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        isa.load_splat(c, 4 * r)
        for reg in range(regs):
            c.emit("local.tee" if reg + 1 < regs else "local.set", acc[r][reg])
    # pb = xrow + (ox * sw - pw) * 4: the first tap of the tile's first column
    f.get("xrow", "ox", "sw").emit("i32.mul").emit("local.get", f.arg["pw"]).emit("i32.sub")
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("local.set", pb)

    def step(base: int, offset: int) -> None:
        """acc += weights at pa[r] + offset x the pixels at ``base`` + offset."""
        for reg in range(regs):
            _load_pixels(f, isa, mode, base, offset, reg)
            c.emit("local.set", pixels[reg])
        for r in range(rows):
            c.emit("local.get", pa[r])
            isa.load_splat(c, offset)
            c.emit("local.set", weight)
            for reg in range(regs):
                c.emit("local.get", weight).emit("local.get", pixels[reg])
                isa.madd_into(c, acc[r][reg])

    def advance(pointer: int, amount: Callable[[], None]) -> None:
        c.emit("local.get", pointer)
        amount()
        c.emit("i32.add").emit("local.set", pointer)

    def weights_by(amount: Callable[[], None]) -> None:
        for pointer in pa:
            advance(pointer, amount)

    def tap() -> None:
        if mode == "checked":
            f.get("iw", "w").emit("i32.lt_u").emit("if")
            step(f.v["pj"], 0)
            c.emit("end")
            advance(f.v["iw"], lambda: f.get("dw"))
        else:
            step(f.v["pj"], 0)
        weights_by(lambda: c.emit("i32.const", 4))
        advance(f.v["pj"], lambda: f.get("dw_bytes"))

    def kernel_row() -> None:
        if mode == "three":
            for column in range(3):
                step(f.v["pi"], 4 * column)
            weights_by(lambda: c.emit("i32.const", 12))
        else:
            c.emit("local.get", f.v["pi"])
            f.set("pj")
            f.get("ox", "sw").emit("i32.mul").emit("local.get", f.arg["pw"]).emit("i32.sub")
            f.set("iw")
            c.emit("i32.const", 0)
            f.set("j")
            strided_loop(c, f.v["j"], 1, f.arg["kw"], tap)
        advance(f.v["pi"], lambda: f.get("dh_row"))

    def channel() -> None:
        if mode == "pointwise":
            step(pb, 0)
            weights_by(lambda: f.get("tap_bytes"))
        else:
            c.emit("local.get", pb)
            f.set("pi")
            f.get("i_lo")
            f.set("t")
            strided_loop(c, f.v["t"], 1, f.v["i_hi"], kernel_row)
            weights_by(lambda: f.get("skip"))
        advance(pb, lambda: f.get("plane"))

    c.emit("i32.const", 0)
    f.set("ch")
    strided_loop(c, f.v["ch"], 1, f.v["cg"], channel)
    _store(f, isa, rows, regs, width, acc)


def _load_pixels(f: _Frame, isa: Isa, mode: str, base: int, offset: int, reg: int) -> None:
    """Push register ``reg`` of the tile's pixels under the tap at ``base`` + ``offset``."""
    c = f.c
    if mode != "gathered":
        c.emit("local.get", base)
        isa.load(c, offset + reg * 4 * isa.lanes)
        return
    for lane in range(isa.lanes):
        c.emit("local.get", base).emit("local.get", f.column_offset[reg * isa.lanes + lane])
        c.emit("i32.add").emit("f32.load", 2, offset)
        if isa.vector and lane == 0:
            c.emit("f32x4.splat")
        elif isa.vector:
            c.emit("f32x4.replace_lane", lane)


def _store(f: _Frame, isa: Isa, rows: int, regs: int, width: int,
           acc: list[list[int]]) -> None:
    """Y (and R) rows: out + ((oc + r) * oh + oy) * ow * 4 + ox * 4; then the epilogue."""
    c = f.c
    for r in range(rows):
        for reg in range(regs):
            for base in ("yg",) + (("rg",) if "r" in f.arg else ()):
                f.get(base, "oc").emit("i32.const", r).emit("i32.add")
                f.get("oh").emit("i32.mul").emit("local.get", f.v["oy"]).emit("i32.add")
                f.get("orow").emit("i32.mul").emit("i32.add").emit("local.get", f.v["ox"])
                c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")
                if base == "rg":
                    isa.load(c, reg * width)
            c.emit("local.get", acc[r][reg])
            if "r" in f.arg:
                isa.op(c, "add")
            for op in f.epilogue:
                activations.apply(c, isa, op)
            isa.store(c, reg * width)
