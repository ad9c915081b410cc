"""The quantize family: f32 <-> int8/uint8 with a scale and zero point per channel, one
element at a time (these run once per quantized op's input or output, beside products k
times longer), and ONNX's dynamic quantization of a whole tensor, 16 at a time in SIMD.

Rounding is ``f32.nearest`` (half to even, as ``numpy.rint``); saturation clamps in f32
before ``i32.trunc_sat_f32_s``, which also sends NaN to 0."""

from __future__ import annotations

import struct
from collections.abc import Callable

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .loops import strided_loop


def _zero_point(c: Code, address: int, signed: int | bool) -> None:
    """Push the zero point byte at ``address`` as an i32: sign-extended when ``signed`` is
    True, or when it is the index of an i32 local holding 1 (``((b + 128 * signed) & 255) -
    128 * signed``)."""
    if isinstance(signed, bool):
        c.emit("local.get", address).emit("i32.load8_s" if signed else "i32.load8_u", 0, 0)
        return
    c.emit("local.get", address).emit("i32.load8_u", 0, 0)
    c.emit("local.get", signed).emit("i32.const", 7).emit("i32.shl").emit("i32.add")
    c.emit("i32.const", 255).emit("i32.and")
    c.emit("local.get", signed).emit("i32.const", 7).emit("i32.shl").emit("i32.sub")


def _channels(c: Code, arg: dict[str, int], signed: int | bool,
              body: Callable[[int, int], None]) -> None:
    """``for o in outer: for ch in channels: body(scale, zero_point) over inner elements``,
    with ``x`` and ``y`` advanced element by element; ``body`` is called once to emit the
    per-element code given the locals of the channel's f32 scale and i32 zero point."""
    o, ch, i, scale, zero = (c.local(t) for t in ("i32", "i32", "i32", "f32", "i32"))
    c.emit("i32.const", 0).emit("local.set", o)

    def per_channel() -> None:
        c.emit("local.get", arg["scale"]).emit("local.get", ch).emit("i32.const", 2)
        c.emit("i32.shl").emit("i32.add").emit("f32.load", 2, 0).emit("local.set", scale)
        c.emit("local.get", arg["zero_point"]).emit("local.get", ch).emit("i32.add")
        c.emit("local.set", zero)
        _zero_point(c, zero, signed)
        c.emit("local.set", zero)
        c.emit("i32.const", 0).emit("local.set", i)
        strided_loop(c, i, 1, arg["inner"], lambda: body(scale, zero))

    def per_outer() -> None:
        c.emit("i32.const", 0).emit("local.set", ch)
        strided_loop(c, ch, 1, arg["channels"], per_channel)

    strided_loop(c, o, 1, arg["outer"], per_outer)


def _advance(c: Code, pointer: int, size: int) -> None:
    c.emit("local.get", pointer).emit("i32.const", size).emit("i32.add").emit("local.set", pointer)


def _store_quantized(c: Code, y: int, zero: int, signed: int | None) -> None:
    """With ``round(x / scale)`` (f32) on the stack: add the zero point, saturate to the
    range (``[-128, 127]`` when ``signed`` is 1, else ``[0, 255]``), store the byte at
    ``y``."""
    result = c.local("f32")
    c.emit("local.get", zero).emit("f32.convert_i32_s").emit("f32.add").emit("local.set", result)
    c.emit("local.get", y).emit("local.get", result)
    if signed is None:
        c.emit("f32.const", 0.0).emit("f32.max").emit("f32.const", 255.0).emit("f32.min")
    else:
        c.emit("local.get", signed).emit("i32.const", -128).emit("i32.mul")
        c.emit("f32.convert_i32_s").emit("f32.max")
        c.emit("local.get", signed).emit("i32.const", -128).emit("i32.mul")
        c.emit("f32.convert_i32_s").emit("f32.const", 255.0).emit("f32.add").emit("f32.min")
    c.emit("i32.trunc_sat_f32_s").emit("i32.store8", 0, 0)


def _quantize(c: Code, arg: dict[str, int]) -> None:
    def element(scale: int, zero: int) -> None:
        c.emit("local.get", arg["x"]).emit("f32.load", 2, 0).emit("local.get", scale)
        c.emit("f32.div").emit("f32.nearest")
        _store_quantized(c, arg["y"], zero, arg["signed"])
        _advance(c, arg["x"], 4)
        _advance(c, arg["y"], 1)

    _channels(c, arg, arg["signed"], element)


def _dequantize(c: Code, arg: dict[str, int], signed: bool) -> None:
    def element(scale: int, zero: int) -> None:
        c.emit("local.get", arg["y"]).emit("local.get", arg["x"])
        c.emit("i32.load8_s" if signed else "i32.load8_u", 0, 0).emit("local.get", zero)
        c.emit("i32.sub").emit("f32.convert_i32_s").emit("local.get", scale).emit("f32.mul")
        c.emit("f32.store", 2, 0)
        _advance(c, arg["x"], 1)
        _advance(c, arg["y"], 4)

    _channels(c, arg, signed, element)


VECTORS = 4
"""f32x4 vectors of x per iteration of the dynamic quantization's SIMD loops: independent
min and max chains, and one 16-byte store of y."""
MAGIC = 12582912.0
"""1.5 * 2 ** 23: ``v + MAGIC`` rounds v half to even to an integer in the low bits of the
float (for ``|v| < 2 ** 22``; here ``|x / scale| <= 255``), read back by an integer subtract
of its bits: rounding and conversion in two instructions, where ``f32x4.nearest`` and
``i32x4.trunc_sat_f32x4_s`` take eight (cranelift's saturating conversion is seven)."""


def _vector_extremes(c: Code, x: int, n: int, i: int, low: int, high: int) -> None:
    """``low``, ``high`` = min and max of 0 and x[0 .. n rounded down to 16], leaving ``i`` at
    the first element not read; NaN in x makes both NaN, as ``f32.min`` would. The lanes use
    ``f32x4.pmin`` / ``pmax`` (one ``minps``: ``f32x4.min``'s NaN and signed-zero rules take
    seven) and track NaN apart."""
    lows, highs = [c.local("v128") for _ in range(2)], [c.local("v128") for _ in range(2)]
    nan, value = c.local("v128"), c.local("v128")
    for register in lows + highs + [nan]:
        c.emit("v128.const", bytes(16)).emit("local.set", register)

    def step() -> None:
        for v in range(VECTORS):
            c.emit("local.get", x).emit("local.get", i).emit("i32.const", 2).emit("i32.shl")
            c.emit("i32.add").emit("v128.load", 0, 16 * v).emit("local.set", value)
            for registers, op in ((lows, "f32x4.pmin"), (highs, "f32x4.pmax")):
                c.emit("local.get", registers[v % 2]).emit("local.get", value).emit(op)
                c.emit("local.set", registers[v % 2])
            c.emit("local.get", nan).emit("local.get", value).emit("local.get", value)
            c.emit("f32x4.ne").emit("v128.or").emit("local.set", nan)

    strided_loop(c, i, 4 * VECTORS, n, step)
    for registers, local, op, scalar in ((lows, low, "f32x4.pmin", "f32.min"),
                                         (highs, high, "f32x4.pmax", "f32.max")):
        c.emit("local.get", registers[0]).emit("local.get", registers[1]).emit(op)
        c.emit("local.set", value)
        c.emit("local.get", value).emit("f32x4.extract_lane", 0)
        for lane in range(1, 4):
            c.emit("local.get", value).emit("f32x4.extract_lane", lane).emit(scalar)
        c.emit("f32.const", float("nan")).emit("local.get", nan).emit("v128.any_true")
        c.emit("i32.eqz").emit("select").emit("local.set", local)


def _vector_quantize(c: Code, arg: dict[str, int], i: int, scale: int, zero: int) -> None:
    """y[i .. i + 16] for x[i .. i + 16] while 16 remain: ``x / scale`` rounded half to even
    by ``MAGIC``, plus the zero point, in i32, saturated to [0, 255] by the two narrows (what
    the scalar element's f32 clamp does to these integers); NaN lanes give 0."""
    x, y = arg["x"], arg["y"]
    divisor, offset, value = (c.local("v128") for _ in range(3))
    ints = [c.local("v128") for _ in range(VECTORS)]
    c.emit("local.get", scale).emit("f32x4.splat").emit("local.set", divisor)
    # offset = zero - bits(MAGIC), so that bits(v + MAGIC) + offset = round(v) + zero
    c.emit("local.get", zero).emit("i32.const", struct.unpack("<i", struct.pack("<f", MAGIC))[0])
    c.emit("i32.sub").emit("i32x4.splat").emit("local.set", offset)

    def step() -> None:
        for v, register in enumerate(ints):
            c.emit("local.get", x).emit("v128.load", 0, 16 * v)
            c.emit("local.get", divisor).emit("f32x4.div").emit("local.tee", value)
            c.emit("f32.const", MAGIC).emit("f32x4.splat").emit("f32x4.add")
            c.emit("local.get", offset).emit("i32x4.add")
            c.emit("local.get", value).emit("local.get", value).emit("f32x4.eq")
            c.emit("v128.and").emit("local.set", register)
        c.emit("local.get", y)
        for pair in (ints[:2], ints[2:]):
            c.emit("local.get", pair[0]).emit("local.get", pair[1]).emit("i16x8.narrow_i32x4_s")
        c.emit("i8x16.narrow_i16x8_u").emit("v128.store", 0, 0)
        _advance(c, x, 16 * VECTORS)
        _advance(c, y, 4 * VECTORS)

    strided_loop(c, i, 4 * VECTORS, arg["n"], step)


def dynamic_quantize(c: Code, arg: dict[str, int], vector: bool) -> None:
    """min and max (with 0), scale, zero point, then quantize every element; a ``vector``
    ISA reads 16 elements at a time, then the rest one by one. ``arg`` names the locals of
    x, y, scale, zero_point and n (it advances those of x and y)."""
    i, low, high, scale, zero = (c.local(t) for t in ("i32", "f32", "f32", "f32", "i32"))
    x, n = arg["x"], arg["n"]
    c.emit("f32.const", 0.0).emit("local.set", low).emit("f32.const", 0.0).emit("local.set", high)
    c.emit("i32.const", 0).emit("local.set", i)
    if vector:
        _vector_extremes(c, x, n, i, low, high)

    def extremes() -> None:
        for local, op in ((low, "f32.min"), (high, "f32.max")):
            c.emit("local.get", local).emit("local.get", x).emit("local.get", i)
            c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("f32.load", 2, 0)
            c.emit(op).emit("local.set", local)

    strided_loop(c, i, 1, n, extremes)
    # scale = (high - low) / 255, or 1 when high == low (an all-zero x).
    c.emit("local.get", high).emit("local.get", low).emit("f32.sub").emit("f32.const", 255.0)
    c.emit("f32.div").emit("f32.const", 1.0).emit("local.get", high).emit("local.get", low)
    c.emit("f32.gt").emit("select").emit("local.set", scale)
    c.emit("local.get", arg["scale"]).emit("local.get", scale).emit("f32.store", 2, 0)
    # zero = saturate(round(0 - low / scale)); low <= 0, so it is >= 0.
    c.emit("f32.const", 0.0).emit("local.get", low).emit("local.get", scale).emit("f32.div")
    c.emit("f32.sub").emit("f32.nearest").emit("f32.const", 255.0).emit("f32.min")
    c.emit("i32.trunc_sat_f32_s").emit("local.set", zero)
    c.emit("local.get", arg["zero_point"]).emit("local.get", zero).emit("i32.store8", 0, 0)
    c.emit("i32.const", 0).emit("local.set", i)
    if vector:
        _vector_quantize(c, arg, i, scale, zero)

    def element() -> None:
        c.emit("local.get", x).emit("f32.load", 2, 0).emit("local.get", scale)
        c.emit("f32.div").emit("f32.nearest")
        _store_quantized(c, arg["y"], zero, None)
        _advance(c, x, 4)
        _advance(c, arg["y"], 1)

    strided_loop(c, i, 1, n, element)


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate quantize kernel ``spec``: the same code for every ISA but dynamic
    quantization, which the SIMD ISAs run 16 elements at a time (it runs before every
    dynamically quantized product)."""
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    if spec.op == "quantize_linear":
        _quantize(c, arg)
    elif spec.op == "dequantize_linear":
        _dequantize(c, arg, spec.dtypes[0] == "int8")
    else:
        dynamic_quantize(c, arg, isa_name != "scalar")
    return FuncType(spec.param_types, spec.results), c
