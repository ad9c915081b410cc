"""The gather path of ``f32_conv_transpose2d``, for depthwise transposes (one input channel
per group) without dilation, where the scatter path would add 4 products per register into
the output once per tap.

Output (oy, ox) gathers ``x[iy, ix] * weight[i, j]`` over ``iy * sh + i = oy + ph`` and
``ix * sw + j = ox + pw``. With ``iy0, i0 = divmod(oy + ph, sh)`` the kernel rows reaching
output row oy are ``i0 + k * sh`` at input row ``iy0 - k``; with ``off0, j0 = divmod(rx + pw,
sw)`` the outputs of column phase rx, ``ox = rx + sw * q``, take kernel columns ``j0 + k * sw``
at input column ``q + off0 - k``. So consecutive outputs of one phase read consecutive input
columns: a register of them sums every tap it needs from registers of input and is stored
once, lane by lane ``sw`` floats apart. Outputs with taps outside the input run one at a
time with a bounds check per tap; the interior's remainder is one more tile overlapping the
previous one.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from .isa import ISAS, Isa
from .loops import strided_loop

if TYPE_CHECKING:
    from .conv_transpose import Frame

WIDE = 4
"""Registers of outputs per tile."""

LOCALS = ("bias_at", "wstep", "i0", "iy0", "k_lo", "k_hi", "rx", "j0", "off0", "nj", "nq", "q",
          "q_lo", "q_hi", "kr", "kc", "wp", "xp")
"""The i32 locals of this path, beside the scatter path's."""


def emit_group(f: Frame) -> None:
    """Every output of the current image and group (xg, wg and yg are set)."""
    # wstep = sw * og * 4: from one kernel column of a phase to the next
    f.get("sw_bytes", "og").emit("i32.mul")
    f.set("wstep")
    f.count("oc", "og", 1, lambda: _channel(f))


def _channel(f: Frame) -> None:
    """Output channel ``oc`` of the group, row by row."""
    # bias_at = bias + (group * og + oc) * 4
    f.get("bias", "group", "og").emit("i32.mul").emit("local.get", f.v["oc"]).emit("i32.add")
    f.c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")
    f.set("bias_at")
    f.count("oy", "oh", 1, lambda: _output_row(f))


def _output_row(f: Frame) -> None:
    """The kernel rows reaching row oy, then every column phase."""
    c = f.c
    # iy0, i0 = divmod(oy + ph, sh)
    f.get("oy", "ph").emit("i32.add").emit("local.tee", f.v["i0"]).emit("local.get", f.arg["sh"])
    c.emit("i32.div_u")
    f.set("iy0")
    f.get("i0", "sh").emit("i32.rem_u")
    f.set("i0")
    # k_hi = min(iy0 + 1, ceil((kh - i0) / sh)), 0 when i0 >= kh
    f.get("kh", "i0").emit("i32.sub").emit("local.get", f.arg["sh"]).emit("i32.add")
    c.emit("i32.const", 1).emit("i32.sub").emit("local.get", f.arg["sh"]).emit("i32.div_u")
    c.emit("i32.const", 0)
    f.get("i0", "kh").emit("i32.lt_u").emit("select")
    f.set("k_hi")
    f.get("iy0").emit("i32.const", 1).emit("i32.add")
    _min(f, "k_hi")
    # k_lo = max(iy0 + 1 - h, 0): rows past the input's end
    f.get("iy0").emit("i32.const", 1).emit("i32.add").emit("local.get", f.arg["h"])
    c.emit("i32.sub").emit("i32.const", 0)
    f.get("iy0", "h").emit("i32.ge_u").emit("select")
    f.set("k_lo")
    # yrow = yg + oc * oplane + oy * orow
    f.get("yg", "oc", "oplane").emit("i32.mul").emit("i32.add")
    f.get("oy", "orow").emit("i32.mul").emit("i32.add")
    f.set("yrow")
    f.count("rx", "sw", 1, lambda: _phase(f))


def _min(f: Frame, name: str) -> None:
    """``name = min(name, the i32 on the stack)`` (unsigned)."""
    value = f.c.local("i32")
    f.c.emit("local.set", value)
    f.get(name).emit("local.get", value).emit("local.get", f.v[name]).emit("local.get", value)
    f.c.emit("i32.lt_u").emit("select")
    f.set(name)


def _phase(f: Frame) -> None:
    """Outputs ox = rx + sw * q: checked ones, vector tiles over the interior, checked ones."""
    c, isa = f.c, f.isa
    # off0, j0 = divmod(rx + pw, sw)
    f.get("rx", "pw").emit("i32.add").emit("local.tee", f.v["j0"]).emit("local.get", f.arg["sw"])
    c.emit("i32.div_u")
    f.set("off0")
    f.get("j0", "sw").emit("i32.rem_u")
    f.set("j0")
    # nj = ceil((kw - j0) / sw), 0 when j0 >= kw; nq = ceil((ow - rx) / sw), 0 when rx >= ow
    for count, limit, start in (("nj", "kw", "j0"), ("nq", "ow", "rx")):
        f.get(limit, start).emit("i32.sub").emit("local.get", f.arg["sw"]).emit("i32.add")
        c.emit("i32.const", 1).emit("i32.sub").emit("local.get", f.arg["sw"]).emit("i32.div_u")
        c.emit("i32.const", 0)
        f.get(start, limit).emit("i32.lt_u").emit("select")
        f.set(count)
    # q_lo = min(max(nj - 1 - off0, 0), nq): the first q whose leftmost tap is inside
    f.get("nj").emit("i32.const", 1).emit("i32.sub").emit("local.get", f.v["off0"])
    c.emit("i32.sub").emit("local.tee", f.v["q_lo"]).emit("i32.const", 0)
    f.get("q_lo").emit("i32.const", 0).emit("i32.gt_s").emit("select")
    f.set("q_lo")
    f.get("nq")
    _min(f, "q_lo")
    # q_hi = max(min(w - off0 if positive, nq), q_lo): the end of those whose rightmost tap
    # is inside
    f.get("w", "off0").emit("i32.sub").emit("local.tee", f.v["q_hi"]).emit("i32.const", 0)
    f.get("q_hi").emit("i32.const", 0).emit("i32.gt_s").emit("select")
    f.set("q_hi")
    f.get("nq")
    _min(f, "q_hi")
    f.get("q_hi", "q_lo", "q_hi", "q_lo").emit("i32.gt_u").emit("select")
    f.set("q_hi")
    c.emit("i32.const", 0)
    f.set("q")
    scalar = ISAS["scalar"]
    strided_loop(c, f.v["q"], 1, f.v["q_lo"], functools.partial(_tile, f, scalar, 1, True))
    for width in (WIDE, 1):
        tile = functools.partial(_tile, f, isa, width, False)
        span = width * isa.lanes
        strided_loop(c, f.v["q"], span, f.v["q_hi"], tile)
        if span > 1:
            # NOTE: outputs are written, not accumulated, so the interior's remainder is one
            # more tile ending at q_hi, overlapping the last (when the interior holds one).
            f.get("q", "q_hi").emit("i32.lt_u")
            f.get("q_hi", "q_lo").emit("i32.sub").emit("i32.const", span).emit("i32.ge_u")
            c.emit("i32.and").emit("if")
            f.get("q_hi").emit("i32.const", span).emit("i32.sub")
            f.set("q")
            tile()
            f.get("q_hi")
            f.set("q")
            c.emit("end")
    strided_loop(c, f.v["q"], 1, f.v["nq"], functools.partial(_tile, f, scalar, 1, True))


def _tile(f: Frame, isa: Isa, regs: int, checked: bool) -> None:
    """Outputs q .. q + regs * lanes of the phase: bias + every tap, then one store each."""
    c = f.c
    acc = [c.local(isa.valtype) for _ in range(regs)]
    weight = c.local(isa.valtype)
    f.get("bias_at")
    isa.load_splat(c)
    for reg, local in enumerate(acc):
        c.emit("local.tee" if reg + 1 < regs else "local.set", local)

    def column() -> None:
        f.get("wp")
        isa.load_splat(c)
        c.emit("local.set", weight)
        if checked:
            # ix = q + off0 - kc; xp points at input column q + off0 - kc already
            f.get("q", "off0").emit("i32.add").emit("local.get", f.v["kc"]).emit("i32.sub")
            f.get("w").emit("i32.lt_u").emit("if")
            f.get("xp")
            isa.load(c)
            c.emit("local.get", weight)
            isa.madd_into(c, acc[0])
            c.emit("end")
        else:
            for reg, local in enumerate(acc):
                f.get("xp")
                isa.load(c, 4 * isa.lanes * reg)
                c.emit("local.get", weight)
                isa.madd_into(c, local)
        for pointer, step in (("wp", "wstep"), ("xp", None)):
            f.get(pointer)
            if step:
                f.get(step).emit("i32.add")
            else:
                c.emit("i32.const", 4).emit("i32.sub")
            f.set(pointer)

    def kernel_row() -> None:
        # wp = wg + (((i0 + kr * sh) * kw + j0) * og + oc) * 4
        f.get("wg", "i0", "kr", "sh").emit("i32.mul").emit("i32.add").emit("local.get",
                                                                          f.arg["kw"])
        c.emit("i32.mul").emit("local.get", f.v["j0"]).emit("i32.add")
        f.get("og").emit("i32.mul").emit("local.get", f.v["oc"]).emit("i32.add")
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        f.set("wp")
        # xp = xg + (iy0 - kr) * row + (q + off0) * 4
        f.get("xg", "iy0", "kr").emit("i32.sub").emit("local.get", f.v["row"]).emit("i32.mul")
        c.emit("i32.add")
        f.get("q", "off0").emit("i32.add").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        f.set("xp")
        f.count("kc", "nj", 1, column)

    f.get("k_lo")
    f.set("kr")
    strided_loop(c, f.v["kr"], 1, f.v["k_hi"], kernel_row)
    _store(f, isa, acc)


def _store(f: Frame, isa: Isa, acc: list[int]) -> None:
    """y[oc, oy, rx + sw * (q + k)] = lane k of the tile."""
    c = f.c
    base = c.local("i32")
    f.get("yrow", "rx", "q", "sw").emit("i32.mul").emit("i32.add")
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("local.set", base)

    def lane_by_lane() -> None:
        for reg, local in enumerate(acc):
            for lane in range(isa.lanes):
                c.emit("local.get", base)
                c.emit("local.get", f.column_offset[reg * isa.lanes + lane]).emit("i32.add")
                c.emit("local.get", local)
                if isa.vector:
                    c.emit("f32x4.extract_lane", lane)
                c.emit("f32.store", 2)

    if not isa.vector:
        lane_by_lane()
        return
    f.get("sw").emit("i32.const", 1).emit("i32.eq").emit("if")
    for reg, local in enumerate(acc):
        c.emit("local.get", base).emit("local.get", local)
        isa.store(c, 4 * isa.lanes * reg)
    c.emit("else")
    lane_by_lane()
    c.emit("end")
