"""The depthwise family: torch's conv2d with ``groups == c`` (each output channel reads one
input channel; ``o / c`` output channels per input channel) on NCHW f32, bias and the
gemm's activations fused.

Each input plane is first copied into the scratch plane, whose zero border is the padding
(``abi.depthwise_scratch_floats``: wide and tall enough that every register a tile loads
lies inside it), so no tile masks a lane or clips a tap. The scratch is zeroed once per
call; the planes copied into it all cover the same interior, so the border stays zero.
The ``IN_PLACE`` kernels (3x3 and 5x5, stride 1 and 2) read the interior output rows' input
rows where they lie, when the padding allows (``_in_place_sizes``): only the border rows'
input rows are copied (with ``ph == k // 2`` the top output rows are read in place too, the
rows above the plane a zero register), the tiles at a row's ends zero the lanes left or
right of the plane, and the tiles read the next input plane ahead (``depthwise_tile``); the
results are bit for bit those of the copy.

Every output row (``depthwise_rows``) is covered by tiles of ``REGS`` registers (the last
one moved left to end at the row's end, recomputing a few columns, when more than one
register's columns are left), then one-register tiles; a row narrower than a register is
one register stored lane by lane. A tile keeps its accumulators in locals and runs the
taps (``depthwise_tile``): unrolled, with constant load offsets, for the common kernels
(``UNROLLED``: 3x3 and 5x5 at stride 1, 2, (2, 1) or (1, 2), 7x7 at stride 1, no dilation), as
runtime loops otherwise. The quantized rows dequantize in the plane copy and quantize in the tiles'
store (``depthwise_quant``). Work is independent per output channel: a caller may split a
call by images or by ranges of input channels, each part with its own scratch plane
(``plane_bytes`` apart: ``parallel.splits``), and the results are bit for bit one call's.
"""

from __future__ import annotations

from collections.abc import Callable

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from . import depthwise_quant
from .depthwise_copy import copy_rows
from .depthwise_rows import IN_PLACE, in_place_rows, rows
from .depthwise_tile import REGS, ROWS, UNROLLED, Frame
from .isa import ISAS

# Locals of the whole call (all i32).
_LOCALS = ("mult", "taps", "hp", "wp", "prow", "row", "plane", "oplane", "orow", "path",
           "image", "ic", "k", "oc", "src", "dst", "r", "wc", "ybase", "oy", "ox", "tx",
           "pbase", "pi", "pj", "yrow", "i", "j", "wi", "span", "inplace", "xplane", "ostart",
           "iend", "left", "right", "rend", "ahead", "aend", "xend",
           "istrict", "iloose", "tail", "mid", "top", "topok", "bottom", "bottomok")


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate depthwise kernel ``spec`` (``f32_depthwise_conv2d[_<activation>]``, or a
    quantized row ``q{u,s}8_depthwise_conv2d[_<activation>]``) for ``isa_name``."""
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    v = {name: c.local("i32") for name in _LOCALS}
    columns = REGS * isa.lanes
    quant = (depthwise_quant.setup(c, isa, arg, spec.dtypes[0] == "int8")
             if spec.dtypes[0] != "float32" else None)
    f = Frame(c, isa, arg, spec.activations, v, [c.local("i32") for _ in range(columns)],
              c.local(isa.valtype), quant)
    _check(f)
    _sizes(f)
    f.count("image", "n", 1, lambda: f.count("ic", "c", 1, lambda: _plane(f)))
    return FuncType(spec.param_types, spec.results), c


def _trap_if(f: Frame) -> None:
    """Trap (``unreachable``) when the i32 on the stack is nonzero."""
    f.c.emit("if").emit("unreachable").emit("end")


def _check(f: Frame) -> None:
    """Trap on a geometry the scratch and the tiles were not sized for: a zero kernel size,
    stride, dilation or channel count, ``o`` not a multiple of ``c``, or ``oh``, ``ow`` other
    than torch's output size."""
    c = f.c
    f.get("kh", "kw").emit("i32.mul").emit("local.get", f.arg["sh"]).emit("i32.mul")
    f.get("sw").emit("i32.mul").emit("local.get", f.arg["dh"]).emit("i32.mul")
    f.get("dw").emit("i32.mul").emit("local.get", f.arg["c"]).emit("i32.mul")
    c.emit("i32.eqz")
    _trap_if(f)
    f.get("o", "c").emit("i32.rem_u")
    _trap_if(f)
    for size, out, kernel, stride, pad, dilation in (("h", "oh", "kh", "sh", "ph", "dh"),
                                                     ("w", "ow", "kw", "sw", "pw", "dw")):
        # span = size + 2 pad - dilation (kernel - 1) - 1; trap unless span >= 0 and
        # out == span / stride + 1
        f.get(size, pad).emit("i32.const", 1).emit("i32.shl").emit("i32.add")
        f.get(dilation, kernel).emit("i32.const", 1).emit("i32.sub").emit("i32.mul")
        c.emit("i32.sub").emit("i32.const", 1).emit("i32.sub")
        f.set("span")
        f.get("span").emit("i32.const", 0).emit("i32.lt_s")
        f.get("span", stride).emit("i32.div_u").emit("i32.const", 1).emit("i32.add")
        f.get(out).emit("i32.ne").emit("i32.or")
        _trap_if(f)


def _max(f: Frame, name: str) -> None:
    """``name = max(name, <i32 on the stack>)`` (signed)."""
    value = f.v["span"]
    f.c.emit("local.set", value)
    f.get(name, "span", name, "span").emit("i32.gt_s").emit("select")
    f.set(name)


def plane_bytes(c: Code, push: Callable[[str], object]) -> None:
    """Push the bytes of one scratch plane (``abi.depthwise_plane_floats`` x 4) of a call
    whose i32 parameters ``push`` pushes by name."""
    _plane_rows(c, push)
    _plane_columns(c, push)
    c.emit("i32.mul").emit("i32.const", 2).emit("i32.shl")


def _push_max(c: Code, first: Callable[[], object], second: Callable[[], object]) -> None:
    """Push ``max(first, second)`` (signed) of the two i32 expressions, each pushed twice."""
    first()
    second()
    first()
    second()
    c.emit("i32.gt_s").emit("select")


def _reach(c: Code, push: Callable[[str], object], out: Callable[[], object], stride: str,
           kernel: str, dilation: str) -> Callable[[], None]:
    """A pusher of (out - 1) * stride + (kernel - 1) * dilation + 1: the input a window of
    ``out`` outputs reaches (``out`` pushes the output count)."""
    def reach() -> None:
        out()
        c.emit("i32.const", 1).emit("i32.sub")
        push(stride)
        c.emit("i32.mul")
        push(kernel)
        c.emit("i32.const", 1).emit("i32.sub")
        push(dilation)
        c.emit("i32.mul").emit("i32.add").emit("i32.const", 1).emit("i32.add")
    return reach


def _plane_rows(c: Code, push: Callable[[str], object]) -> None:
    """Push hp = max(ph + h, (oh - 1) * sh + (kh - 1) * dh + 1), the scratch plane's rows."""
    _push_max(c, lambda: (push("ph"), push("h"), c.emit("i32.add")),
              _reach(c, push, lambda: push("oh"), "sh", "kh", "dh"))


def _plane_columns(c: Code, push: Callable[[str], object]) -> None:
    """Push wp = max(pw + w, (max(ow, 8) - 1) * sw + (kw - 1) * dw + 1) + 4, the scratch
    plane's floats per row (a narrow tile reads a row under 8 wide as 8 wide)."""
    def wide() -> None:
        push("ow")
        c.emit("i32.const", 8)
        push("ow")
        c.emit("i32.const", 8).emit("i32.gt_u").emit("select")

    _push_max(c, lambda: (push("pw"), push("w"), c.emit("i32.add")),
              _reach(c, push, wide, "sw", "kw", "dw"))
    c.emit("i32.const", 4).emit("i32.add")


def _sizes(f: Frame) -> None:
    """Sizes (bytes unless named in floats), the path, and the zeroed scratch plane."""
    c = f.c
    f.get("o", "c").emit("i32.div_u")
    f.set("mult")
    f.get("kh", "kw").emit("i32.mul")
    f.set("taps")
    _plane_rows(c, f.get)
    f.set("hp")
    _plane_columns(c, f.get)
    f.set("wp")
    f.get("wp").emit("i32.const", 2).emit("i32.shl")
    f.set("prow")
    for row, plane, width, height in (("row", "plane", "w", "h"), ("orow", "oplane", "ow", "oh")):
        f.get(width).emit("i32.const", f.shift)
        c.emit("i32.shl")
        f.set(row)
        f.get(row, height).emit("i32.mul")
        f.set(plane)
    f.get("scratch").emit("i32.const", 0).emit("local.get", f.v["hp"])
    f.get("prow").emit("i32.mul").emit("memory.fill")
    # path = 1 + the index of the unrolled kernel (kh == kw == k, (sh, sw) its stride, dh ==
    # dw == 1), else 0
    c.emit("i32.const", 0)
    f.set("path")
    for index, (k, sh, sw) in enumerate(UNROLLED):
        f.get("kh").emit("i32.const", k).emit("i32.eq")
        f.get("kw").emit("i32.const", k).emit("i32.eq").emit("i32.and")
        for name, value in (("sh", sh), ("sw", sw), ("dh", 1), ("dw", 1)):
            f.get(name).emit("i32.const", value).emit("i32.eq").emit("i32.and")
        c.emit("if")
        c.emit("i32.const", index + 1)
        f.set("path")
        c.emit("end")
    # tail = w - lanes, mid = min(2 lanes, tail): the narrow rows' copy (_copy_row)
    f.get("w").emit("i32.const", f.isa.lanes).emit("i32.sub")
    f.set("tail")
    c.emit("i32.const", 2 * f.isa.lanes).emit("local.get", f.v["tail"])
    f.get("tail").emit("i32.const", 2 * f.isa.lanes).emit("i32.gt_s").emit("select")
    f.set("mid")
    for k, local in enumerate(f.column_offset):
        f.get("sw").emit("i32.const", 4 * k).emit("i32.mul").emit("local.set", local)
    if _reads_in_place(f):
        _in_place_sizes(f)


def _reads_in_place(f: Frame) -> bool:
    """Whether this variant has the in-place path (f32 rows with vector tiles)."""
    return f.quant is None and f.isa.vector


def _in_place_sizes(f: Frame) -> None:
    """``inplace``: the call takes an ``IN_PLACE`` kernel (k x k, stride (sh, s)) with ``ph``,
    ``pw`` <= k // 2, rows of at least its ``IN_PLACE`` registers, and padding right of the
    plane only inside the register after a row's last one (``s ow - pw < w``: its last
    output column's taps end before column ``w + k - 1 - s``), which the tile ending the row
    zeroes (an earlier tile holding one of those columns, e.g. column ``ow - 2`` of a 5x5
    row 9 wide, computes it wrong, and the last tile, stored after it, right); at s = 1
    also row 0's left lanes readable (``x >= 4 pw``). Its output rows ``ostart <= oy <
    iend`` read input rows 0 <= ``sh oy - ph`` .. ``h - 1`` in place (``istrict``: .. ``h -
    2`` in the input's last plane, as a tile's registers reach up to 3 floats past its
    row's end, a narrow tile's up to 9, and such a row is at least 10 wide; ``iloose`` in
    the others), each register a tile loads then inside the input, or one row before the
    plane for the zeroed left lanes; the other rows go through the scratch plane, which gets
    only their input rows. ``edges``: the lanes a tile zeroes, ``l < pw`` on the left and
    ``l >= w - (s ow - pw)`` right of column ``s ow - pw``, where a row's last register's C
    starts."""
    c = f.c
    c.emit("i32.const", 0)
    for (k, _, s), registers in IN_PLACE.items():
        f.get("path").emit("i32.const", UNROLLED.index((k, _, s)) + 1).emit("i32.eq")
        f.get("ph").emit("i32.const", k // 2).emit("i32.le_u").emit("i32.and")
        f.get("pw").emit("i32.const", k // 2).emit("i32.le_u").emit("i32.and")
        f.get("ow").emit("i32.const", f.isa.lanes * registers).emit("i32.ge_u").emit("i32.and")
        f.get("ow").emit("i32.const", s).emit("i32.mul")
        f.get("pw").emit("i32.sub").emit("local.get", f.arg["w"]).emit("i32.lt_s")
        c.emit("i32.and")
        if s == 1:
            f.get("x", "pw").emit("i32.const", 2).emit("i32.shl").emit("i32.ge_u")
            c.emit("i32.and")
        c.emit("i32.or")
    f.set("inplace")
    iota = b"".join(lane.to_bytes(4, "little") for lane in range(f.isa.lanes))
    left, right = c.local("v128"), c.local("v128")
    # left = (iota - pw) >> 31; right = (w - sw ow + pw - 1 - iota) >> 31 (arithmetic)
    c.emit("v128.const", iota)
    f.get("pw").emit("i32x4.splat").emit("i32x4.sub").emit("i32.const", 31).emit("i32x4.shr_s")
    c.emit("local.set", left)
    f.get("w", "sw", "ow").emit("i32.mul").emit("i32.sub")
    f.get("pw").emit("i32.add").emit("i32.const", 1).emit("i32.sub").emit("i32x4.splat")
    c.emit("v128.const", iota).emit("i32x4.sub").emit("i32.const", 31).emit("i32x4.shr_s")
    c.emit("local.set", right)
    f.edges = (left, right)
    f.tile_edges = (c.local("v128"), c.local("v128"))
    f.get("ph")
    f.set("ostart")
    f.get("pw")
    _max(f, "ostart")
    # topok: a k x k call with ph == k // 2 whose left lanes are readable (x >= 4 pw) runs
    # output rows 0 and 1 in place, the rows above the plane a zero register
    c.emit("i32.const", 0)
    for kernel in IN_PLACE:
        f.get("path").emit("i32.const", UNROLLED.index(kernel) + 1).emit("i32.eq")
        f.get("ph").emit("i32.const", kernel[0] // 2).emit("i32.eq").emit("i32.and")
        c.emit("i32.or")
    f.get("x", "pw").emit("i32.const", 2).emit("i32.shl").emit("i32.ge_u").emit("i32.and")
    f.set("topok")
    # bottomok: a k x k call at stride 1 with ph == k // 2 runs its last rows in place (but
    # in the input's last plane), the rows below the plane a zero register
    c.emit("i32.const", 0)
    for k, sh, sw in IN_PLACE:
        if sh == 1:
            f.get("path").emit("i32.const", UNROLLED.index((k, sh, sw)) + 1).emit("i32.eq")
            f.get("ph").emit("i32.const", k // 2).emit("i32.eq").emit("i32.and")
            c.emit("i32.or")
    f.set("bottomok")
    for name, last in (("istrict", 2), ("iloose", 1)):
        # name = max(ostart, min(oh, (h - last + ph - (kh - 1)) / sh + 1)): the rows whose
        # taps end at input row h - last or above (signed, rounded toward zero)
        f.get("h", "ph").emit("i32.add").emit("local.get", f.arg["sh"]).emit("i32.add")
        c.emit("i32.const", last - 1).emit("i32.sub")
        f.get("kh").emit("i32.sub")
        f.get("sh").emit("i32.div_s").emit("local.tee", f.v[name])
        f.get("oh", name, "oh").emit("i32.lt_s").emit("select")
        f.set(name)
        f.get("ostart")
        _max(f, name)
    # xend = x + n * c * plane: the end of the input
    f.get("x", "n", "c").emit("i32.mul").emit("local.get", f.v["plane"]).emit("i32.mul")
    c.emit("i32.add")
    f.set("xend")


def _plane(f: Frame) -> None:
    """Copy input plane (image, ic) into the scratch interior, then its ``mult`` output
    channels."""
    # src = x + (image * c + ic) * plane; dst = scratch + ph * prow + pw * 4
    f.get("x", "image", "c").emit("i32.mul").emit("local.get", f.v["ic"]).emit("i32.add")
    f.get("plane").emit("i32.mul").emit("i32.add")
    f.set("xplane")
    if _reads_in_place(f):
        # ahead .. aend: the next input plane, which the in-place tiles read ahead
        # (depthwise_tile._read_ahead); empty after the last one
        f.get("xplane", "plane").emit("i32.add").emit("local.tee", f.v["ahead"])
        f.get("plane").emit("i32.add").emit("local.tee", f.v["aend"])
        f.get("xend", "aend", "xend").emit("i32.lt_u").emit("select")
        f.set("aend")
        f.get("inplace").emit("if")
        # iend = iloose unless this is the input's last plane
        f.get("iloose", "istrict", "ahead", "xend").emit("i32.lt_u").emit("select")
        f.set("iend")
        # top: output rows 0 and 1 in place (no rows of output rows < ostart to copy), when
        # iend >= 2 is not only ostart's bound (iend > ostart)
        f.get("topok", "iend").emit("i32.const", ROWS).emit("i32.ge_u").emit("i32.and")
        f.get("iend", "ostart").emit("i32.gt_u").emit("i32.and")
        f.set("top")
        f.get("top").emit("i32.eqz").emit("if")
        # the rows of output rows < ostart: rend = min(h, (ostart - 1) sh - ph + kh)
        f.get("ostart").emit("i32.const", 1).emit("i32.sub").emit("local.get", f.arg["sh"])
        f.c.emit("i32.mul")
        f.get("ph").emit("i32.sub")
        f.get("kh").emit("i32.add").emit("local.tee", f.v["rend"])
        f.get("h", "rend", "h").emit("i32.lt_u").emit("select")
        f.set("rend")
        copy_rows(f, lambda: f.c.emit("i32.const", 0))
        f.c.emit("end")
        # bottom: the rows of output rows >= iend in place, when this is not the input's
        # last plane (iend is then iloose, and a row's loads past its end stay inside x)
        f.get("bottomok", "ahead", "xend").emit("i32.lt_u").emit("i32.and")
        f.set("bottom")
        # else the rows of output rows >= iend: from iend sh - ph (>= 0 as iend >= ph)
        f.get("bottom").emit("i32.eqz").emit("if")
        f.get("h")
        f.set("rend")
        copy_rows(f, lambda: f.get("iend", "sh").emit("i32.mul")
                   .emit("local.get", f.arg["ph"]).emit("i32.sub"))
        f.c.emit("end")
        f.c.emit("else")
    f.get("h")
    f.set("rend")
    copy_rows(f, lambda: f.c.emit("i32.const", 0))
    if _reads_in_place(f):
        f.c.emit("end")
    f.count("k", "mult", 1, lambda: _channel(f))


def _channel(f: Frame) -> None:
    """Output channel oc = ic * mult + k: its weights, bias and output plane, then the path
    its kernel takes."""
    c = f.c
    f.get("ic", "mult").emit("i32.mul").emit("local.get", f.v["k"]).emit("i32.add")
    f.set("oc")
    f.get("weight", "oc", "taps").emit("i32.mul").emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add")
    f.set("wc")
    f.get("y", "image", "o").emit("i32.mul").emit("local.get", f.v["oc"]).emit("i32.add")
    f.get("oplane").emit("i32.mul").emit("i32.add")
    f.set("ybase")
    f.get("bias", "oc").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    f.isa.load_splat(c)
    c.emit("local.set", f.bias)
    for index, kernel in enumerate(UNROLLED):
        f.get("path").emit("i32.const", index + 1).emit("i32.eq").emit("if")
        if kernel in IN_PLACE and _reads_in_place(f):
            f.get("inplace").emit("if")
            in_place_rows(f, kernel)
            c.emit("else")
            rows(f, kernel)
            c.emit("end")
        else:
            rows(f, kernel)
        c.emit("else")
    if f.isa.vector:
        f.get("sw").emit("i32.const", 1).emit("i32.eq").emit("if")
        rows(f, None, "unit")
        c.emit("else")
        rows(f, None, "gather")
        c.emit("end")
    else:
        rows(f, None, "gather")
    for _ in UNROLLED:
        c.emit("end")
