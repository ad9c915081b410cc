"""The pool family: max or average over the windows of x(planes, h, w).

One output at a time for every ISA: taps outside the input are skipped by an unsigned
bounds check on the row (once per kernel row) and on the column, so padding, dilation and
ceil_mode's partial windows need no copy of the input. A 3x3 window's rows and taps are
straight-line code: a loop back-edge is where a timeout (epoch interruption) or fuel checks
its limit, and with 13 of them per output ResNet-18's 3x3 max pool took 3.5 ms, 5.5 under a
timeout; with one, 2.4 and 3.6 (``bench/op_profile.py --model resnet18 [--timeout]``; four
outputs per iteration measured no better). ``f32_avg_pool2d`` multiplies each
window's sum by its entry of ``scale``, which carries torch's divisor rules.

The vector ISAs compute four outputs of a row per step where all their taps lie inside the
row, at column stride 1 (a plain load per tap) or 2 (two loads, even lanes): occular-deskew's
four 2x2 max pools went from 5.5 to 1.8 ms in situ (``op_profile``), ddddocr det's SPPF
passes (5x1 and 1x5) are stride 1 throughout. The edges and other strides stay one by one.
A max pool of up to 5x5 at dilation 1 first runs ``pool_rows.fast_rows`` (column maxima,
then shuffled taps; open_nsfw's 3x3/2 pool 0.48 -> 0.21 ms hot), which hands this general
row whatever it leaves. The vector max is ``pmax`` plus a NaN mask: the same maxima and
NaNs as the scalar ``f32.max``, except that a window holding both -0 and +0 may give either
zero.

``f32_adaptive_avg_pool2d`` computes each output's window bounds from torch's adaptive rule
(start = i * h // oh, end = ceil((i + 1) * h / oh)), so uneven windows need no table.
"""

from __future__ import annotations

from collections.abc import Callable

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .conv_tiles import EVEN_LANES
from .isa import ISAS, Isa
from .loops import strided_loop
from .pool_rows import fast_rows, scalar_rows

COMBINE: dict[str, tuple[str, float]] = {"f32_max_pool2d": ("f32.max", float("-inf")),
                                         "f32_avg_pool2d": ("f32.add", 0.0)}
"""The fold of each kernel and its identity (what a padding tap contributes)."""


def _code(spec: KernelSpec, locals_: tuple[str, ...]) -> tuple[Code, dict[str, int], int]:
    """A body whose arguments and i32 ``locals_`` are named, and its f32 accumulator."""
    c = Code(spec.param_types, names=spec.params)
    v = {name: c.local("i32", name) for name in locals_}
    return c, v, c.local("f32", "acc")


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate pool kernel ``spec``: scalar, plus four outputs per step for a vector ISA."""
    if spec.name == "f32_adaptive_avg_pool2d":
        return _adaptive(spec)
    combine, identity = COMBINE[spec.name]
    isa = ISAS[isa_name]
    c, v, acc = _code(spec, ("plane", "row", "p", "oy", "ox", "i", "j", "ih", "iw", "xp", "out",
                             "span", "wlim", "at", "step"))
    arg, get = c.names, c.get

    get("w").emit("i32.const", 2).emit("i32.shl").emit("local.set", v["row"])
    get("h", "row").emit("i32.mul").emit("local.set", v["plane"])
    get("y").emit("local.set", v["out"])
    get("x").emit("local.set", v["xp"])

    def tap() -> None:
        # iw = ox * sw - pw + j * dw; acc = combine(acc, x[ih, iw]) when iw is inside
        get("ox", "sw").emit("i32.mul").emit("local.get", arg["pw"]).emit("i32.sub")
        get("j", "dw").emit("i32.mul").emit("i32.add").emit("local.tee", v["iw"])
        get("w").emit("i32.lt_u").emit("if")
        get("xp", "ih", "row").emit("i32.mul").emit("i32.add").emit("local.get", v["iw"])
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("f32.load", 2)
        c.emit("local.get", acc).emit(combine).emit("local.set", acc)
        c.emit("end")

    def kernel_row() -> None:
        get("oy", "sh").emit("i32.mul").emit("local.get", arg["ph"]).emit("i32.sub")
        get("i", "dh").emit("i32.mul").emit("i32.add").emit("local.tee", v["ih"])
        get("h").emit("i32.lt_u").emit("if")
        _window_loop(c, v["j"], arg["kw"], tap)
        c.emit("end")

    def output() -> None:
        c.emit("f32.const", identity).emit("local.set", acc)
        _window_loop(c, v["i"], arg["kh"], kernel_row)
        get("out").emit("local.get", acc)
        if "scale" in arg:
            get("scale", "oy", "ow").emit("i32.mul").emit("local.get", v["ox"]).emit("i32.add")
            c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("f32.load", 2)
            c.emit("f32.mul")
        c.emit("f32.store", 2)
        get("out").emit("i32.const", 4).emit("i32.add").emit("local.set", v["out"])

    def output_row() -> None:
        c.emit("i32.const", 0).emit("local.set", v["ox"])
        if isa.vector:
            if combine == "f32.max":
                fast_rows(c, isa, output)
            _vector_row(c, isa, combine, identity, output)
        else:
            if combine == "f32.max":
                scalar_rows(c, output)
            strided_loop(c, v["ox"], 1, arg["ow"], output)

    def plane() -> None:
        c.emit("i32.const", 0).emit("local.set", v["oy"])
        strided_loop(c, v["oy"], 1, arg["oh"], output_row)
        get("xp", "plane").emit("i32.add").emit("local.set", v["xp"])

    if isa.vector:
        # span = (kw - 1) * dw - pw: the last tap's column minus the window's first output's
        get("kw").emit("i32.const", 1).emit("i32.sub").emit("local.get", arg["dw"])
        c.emit("i32.mul").emit("local.get", arg["pw"]).emit("i32.sub").emit("local.set", v["span"])
        # wlim = w at stride 1 or 2, else below any column: every output then goes one by one
        get("w").emit("i32.const", -2 ** 31).emit("local.get", arg["sw"]).emit("i32.const", 1)
        c.emit("i32.sub").emit("i32.const", 2).emit("i32.lt_u").emit("select")
        c.emit("local.set", v["wlim"])
        get("dw").emit("i32.const", 2).emit("i32.shl").emit("local.set", v["step"])
    c.emit("i32.const", 0).emit("local.set", v["p"])
    strided_loop(c, v["p"], 1, arg["planes"], plane)
    return FuncType(spec.param_types, spec.results), c


def _vector_row(c: Code, isa: Isa, combine: str, identity: float,
                output: Callable[[], None]) -> None:
    """One output row from ``ox`` = 0: four outputs per step where their windows' columns
    all lie inside the row (stride 1 or 2), ``output()`` one by one elsewhere (the edges,
    other strides). Each lane folds its taps in the scalar order, so the result is the same
    (up to the sign of a zero maximum, see the module's docstring)."""
    arg, get = c.names, c.get
    vacc = c.local("v128")
    fold = combine.split(".")[1]
    # NOTE: f32x4.max is eight x86 instructions (NaN and -0 rules); the max pool folds with
    # pmax (one) and ORs each tap's NaN lanes into ``nans`` (two), all ones where a NaN was.
    nans, value = (c.local("v128"), c.local("v128")) if fold == "max" else (None, None)

    def tap(stride: int) -> None:
        # vacc = fold(vacc, the columns of four outputs at ``at``); at += dw * 4
        get("at")
        isa.load(c)
        if stride == 2:
            get("at")
            isa.load(c, 16)
            c.emit("i8x16.shuffle", EVEN_LANES)
        if nans is None:
            c.emit("local.get", vacc)
            isa.op(c, fold)
        else:
            c.emit("local.tee", value).emit("local.get", value).emit("f32x4.ne")
            c.emit("local.get", nans).emit("v128.or").emit("local.set", nans)
            c.emit("local.get", vacc).emit("local.get", value).emit("f32x4.pmax")
        c.emit("local.set", vacc)
        get("at", "step").emit("i32.add").emit("local.set", arg["at"])

    def kernel_row(stride: int) -> None:
        # at = xp + (ih * w + ox * sw - pw) * 4 when row ih is inside
        get("oy", "sh").emit("i32.mul").emit("local.get", arg["ph"]).emit("i32.sub")
        get("i", "dh").emit("i32.mul").emit("i32.add").emit("local.tee", arg["ih"])
        get("h").emit("i32.lt_u").emit("if")
        get("xp", "ih", "row").emit("i32.mul").emit("i32.add")
        get("ox", "sw").emit("i32.mul").emit("local.get", arg["pw"]).emit("i32.sub")
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("local.set", arg["at"])
        _window_loop(c, arg["j"], arg["kw"], lambda: tap(stride), VECTOR_UNROLLED)
        c.emit("end")

    def four(stride: int) -> None:
        isa.const(c, identity)
        c.emit("local.set", vacc)
        if nans is not None:
            c.emit("v128.const", bytes(16)).emit("local.set", nans)
        _window_loop(c, arg["i"], arg["kh"], lambda: kernel_row(stride), VECTOR_UNROLLED)
        get("out").emit("local.get", vacc)
        if nans is not None:
            c.emit("local.get", nans).emit("v128.or")
        if "scale" in arg:
            get("scale", "oy", "ow").emit("i32.mul").emit("local.get", arg["ox"]).emit("i32.add")
            c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            isa.load(c)
            isa.op(c, "mul")
        isa.store(c)
        get("out").emit("i32.const", 16).emit("i32.add").emit("local.set", arg["out"])

    with c.loop():
        get("ox", "ow").emit("i32.ge_u").emit("br_if", 1)
        # inside: ox * sw >= pw and (ox + 4) * sw + span <= wlim (the last column read < w)
        get("ox", "sw").emit("i32.mul").emit("local.get", arg["pw"]).emit("i32.ge_s")
        get("ox").emit("i32.const", 4).emit("i32.add").emit("local.get", arg["sw"])
        c.emit("i32.mul").emit("local.get", arg["span"]).emit("i32.add")
        get("wlim").emit("i32.le_s").emit("i32.and").emit("if")
        get("sw").emit("i32.const", 1).emit("i32.eq").emit("if")
        four(1)
        c.emit("else")
        four(2)
        c.emit("end")
        get("ox").emit("i32.const", 4).emit("i32.add").emit("local.set", arg["ox"])
        c.emit("else")
        output()
        get("ox").emit("i32.const", 1).emit("i32.add").emit("local.set", arg["ox"])
        c.emit("end")


VECTOR_UNROLLED = (1, 2, 3)
"""Window sizes whose vector taps are straight-line code (2x2 and 3x3 pools, and the
(k, 1) and (1, k) passes of a separable max pool)."""


def _window_loop(c: Code, counter: int, limit: int, body: Callable[[], None],
                 unrolled: tuple[int, ...] = (3,)) -> None:
    """``body()`` for ``counter`` in 0 .. ``limit``: straight-line when ``limit`` is one of
    ``unrolled``, else a loop."""
    for size in unrolled:
        c.emit("local.get", limit).emit("i32.const", size).emit("i32.eq").emit("if")
        for index in range(size):
            c.emit("i32.const", index).emit("local.set", counter)
            body()
        c.emit("else")
    c.emit("i32.const", 0).emit("local.set", counter)
    strided_loop(c, counter, 1, limit, body)
    for _ in unrolled:
        c.emit("end")


def _adaptive(spec: KernelSpec) -> tuple[FuncType, Code]:
    """Each output = the sum of its adaptive window / the window's size."""
    c, v, acc = _code(spec, ("p", "oy", "ox", "h0", "h1", "w0", "w1", "ih", "iw", "xp", "out"))
    arg, get = c.names, c.get

    def bounds(index: str, size: str, out: str, start: str, end: str) -> None:
        """start = index * size // out; end = ((index + 1) * size + out - 1) // out."""
        get(index, size).emit("i32.mul").emit("local.get", arg[out]).emit("i32.div_u")
        c.emit("local.set", v[start])
        get(index).emit("i32.const", 1).emit("i32.add").emit("local.get", arg[size])
        c.emit("i32.mul").emit("local.get", arg[out]).emit("i32.add").emit("i32.const", 1)
        c.emit("i32.sub").emit("local.get", arg[out]).emit("i32.div_u").emit("local.set", v[end])

    def tap() -> None:
        # acc += x[xp + (ih * w + iw) * 4]
        get("xp", "ih", "w").emit("i32.mul").emit("local.get", v["iw"]).emit("i32.add")
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("f32.load", 2)
        c.emit("local.get", acc).emit("f32.add").emit("local.set", acc)

    def window_row() -> None:
        get("w0").emit("local.set", v["iw"])
        strided_loop(c, v["iw"], 1, v["w1"], tap)

    def output() -> None:
        bounds("ox", "w", "ow", "w0", "w1")
        c.emit("f32.const", 0.0).emit("local.set", acc)
        get("h0").emit("local.set", v["ih"])
        strided_loop(c, v["ih"], 1, v["h1"], window_row)
        get("out").emit("local.get", acc)
        get("h1", "h0").emit("i32.sub").emit("local.get", v["w1"]).emit("local.get", v["w0"])
        c.emit("i32.sub").emit("i32.mul").emit("f32.convert_i32_u").emit("f32.div")
        c.emit("f32.store", 2)
        get("out").emit("i32.const", 4).emit("i32.add").emit("local.set", v["out"])

    def output_row() -> None:
        bounds("oy", "h", "oh", "h0", "h1")
        c.emit("i32.const", 0).emit("local.set", v["ox"])
        strided_loop(c, v["ox"], 1, arg["ow"], output)

    def plane() -> None:
        c.emit("i32.const", 0).emit("local.set", v["oy"])
        strided_loop(c, v["oy"], 1, arg["oh"], output_row)
        get("xp", "h", "w").emit("i32.mul").emit("i32.const", 2).emit("i32.shl")
        c.emit("i32.add").emit("local.set", v["xp"])

    get("y").emit("local.set", v["out"])
    get("x").emit("local.set", v["xp"])
    c.emit("i32.const", 0).emit("local.set", v["p"])
    strided_loop(c, v["p"], 1, arg["planes"], plane)
    return FuncType(spec.param_types, spec.results), c
