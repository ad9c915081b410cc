"""The quantized rows of the depthwise family (``qu8_`` / ``qs8_depthwise_conv2d``): the
plane copy dequantizes each input byte into the f32 scratch plane (``load``), the f32 tiles
run unchanged, and their store quantizes each output (``store``), with the operations of
``dequantize_linear`` and ``quantize_linear`` (``templates/quantize.py``) in the same order,
so the result is the three kernels' bit for bit."""

from __future__ import annotations

from dataclasses import dataclass

from ..wasm import Code
from .isa import ISAS, Isa

SCALAR = ISAS["scalar"]


@dataclass
class Quant:
    """The signedness of the bytes and the (scale, zero point) pairs of a call, in locals:
    each twice, as one f32 / i32 (``scalar``) and in every lane of a register (``lanes``,
    the same locals for the scalar ISA)."""

    c: Code
    signed: bool
    scalar: dict[str, int]
    """``x_scale``, ``y_scale``, ``y_zero``, ``low``, ``high`` (f32) and ``x_zero`` (i32);
    ``below``, ``above``: ``low - y_zero`` and ``high - y_zero`` (f32)."""
    lanes: dict[str, int]
    """The same in every lane (``x_zero`` as i32x4)."""

    def get(self, register: Isa, *names: str) -> None:
        """Push the named values for ``register``."""
        source = self.lanes if register.vector else self.scalar
        for name in names:
            self.c.emit("local.get", source[name])


def setup(c: Code, isa: Isa, arg: dict[str, int], signed: bool) -> Quant:
    """Load the call's scales and zero points (one each, ``x_scale``, ``x_zero``,
    ``y_scale``, ``y_zero`` arguments) and the saturation bounds into locals."""
    low, high = (-128.0, 127.0) if signed else (0.0, 255.0)
    byte = "i32.load8_s" if signed else "i32.load8_u"
    scalar: dict[str, int] = {}
    for name, load in (("x_scale", ("f32.load", 2)), ("y_scale", ("f32.load", 2)),
                       ("x_zero", (byte, 0)), ("y_zero", (byte, 0))):
        scalar[name] = c.local("i32" if name == "x_zero" else "f32")
        c.emit("local.get", arg[name]).emit(load[0], load[1], 0)
        if name == "y_zero":
            c.emit("f32.convert_i32_s")
        c.emit("local.set", scalar[name])
    for name, value in (("low", low), ("high", high)):
        scalar[name] = c.local("f32")
        c.emit("f32.const", value).emit("local.set", scalar[name])
    for name, bound in (("below", "low"), ("above", "high")):
        scalar[name] = c.local("f32")
        c.emit("local.get", scalar[bound]).emit("local.get", scalar["y_zero"]).emit("f32.sub")
        c.emit("local.set", scalar[name])
    lanes = scalar
    if isa.vector:
        lanes = {}
        for name, local in scalar.items():
            lanes[name] = c.local("v128")
            c.emit("local.get", local).emit("i32x4.splat" if name == "x_zero" else "f32x4.splat")
            c.emit("local.set", lanes[name])
    return Quant(c, signed, scalar, lanes)


def load(q: Quant, register: Isa, offset: int = 0) -> None:
    """Replace the address on the stack by ``register``'s bytes there, dequantized:
    ``float32(x - x_zero) * x_scale``."""
    c, sign = q.c, "s" if q.signed else "u"
    if register.vector:
        c.emit("v128.load32_zero", 0, offset).emit(f"i16x8.extend_low_i8x16_{sign}")
        c.emit(f"i32x4.extend_low_i16x8_{sign}")
        q.get(register, "x_zero")
        c.emit("i32x4.sub").emit("f32x4.convert_i32x4_s")
    else:
        c.emit(f"i32.load8_{sign}", 0, offset)
        q.get(register, "x_zero")
        c.emit("i32.sub").emit("f32.convert_i32_s")
    q.get(register, "x_scale")
    register.op(c, "mul")


MAGIC = 12582912.0
"""1.5 * 2 ** 23: ``v + MAGIC`` rounds a float ``|v| < 2 ** 22`` half to even to an integer
``n`` and holds ``n`` in its low mantissa bits (the bits are ``0x4B400000 + n``)."""

LOW_BYTES = bytes([0, 4, 8, 12] * 4)
"""The ``i8x16.shuffle`` gathering each lane's low byte into the first four."""


def store(q: Quant, register: Isa, offset: int = 0) -> None:
    """Store the f32 ``register`` on top of the stack as bytes at the address below it:
    ``saturate(round_half_even(v / y_scale) + y_zero)``.

    One lane at a time: clamped in f32 after adding the zero point, then the saturating
    truncation (which sends NaN to 0). A vector: ``t = v / y_scale`` clamped first to
    ``[low - y_zero, high - y_zero]`` (integers, so clamping commutes with rounding) by
    ``pmax`` / ``pmin`` (one instruction each; they pass NaN through), rounded by adding
    ``MAGIC``, ``y_zero`` added exactly, and each lane's low byte kept (NaN, from a zero
    ``y_scale`` only, keeps the low byte of x86's default NaN, 0)."""
    c = q.c
    q.get(register, "y_scale")
    register.op(c, "div")
    if not register.vector:
        register.op(c, "nearest")
        q.get(register, "y_zero")
        register.op(c, "add")
        q.get(register, "low")
        register.op(c, "max")
        q.get(register, "high")
        register.op(c, "min")
        c.emit("i32.trunc_sat_f32_s").emit("i32.store8", 0, offset)
        return
    q.get(register, "below")
    c.emit("f32x4.pmax")
    q.get(register, "above")
    c.emit("f32x4.pmin")
    register.const(c, MAGIC)
    c.emit("f32x4.add")
    q.get(register, "y_zero")
    c.emit("f32x4.add")
    bits = c.local("v128")
    c.emit("local.tee", bits).emit("local.get", bits).emit("i8x16.shuffle", LOW_BYTES)
    c.emit("i32x4.extract_lane", 0).emit("i32.store", 0, offset)
