"""The WebAssembly instruction table: one row per opcode drives the encoder, the stack
check, the decoder and the text printer (as WAVM's ``OperatorTable.h`` does).

Each row is ``name: Op(prefix, code, immediate, pops, pushes)``. ``prefix`` is ``None`` for
single-byte opcodes, ``0xFC`` for the misc prefix, ``0xFD`` for SIMD and ``0xFE`` for
atomics (its code is a LEB128 u32). ``immediate`` names how the operands after the opcode
are encoded (see ``encode.py``).
``pops`` and ``pushes`` are the value types the instruction takes from the stack (bottom
first) and leaves on it; they are ``None`` for the few whose effect depends on their
immediates or on the enclosing blocks (control, ``drop``, ``select``, ``local.*``,
``global.*``, ``call``), which ``validate.py`` handles by rule.
"""

from __future__ import annotations

from typing import NamedTuple

NONE, U32, MEMARG, I32, I64, F32, F64, BLOCK, V128, LANE, ZERO1, ZERO2 = (
    "none", "u32", "memarg", "i32", "i64", "f32", "f64", "block", "v128", "lane", "zero1", "zero2",
)


class Op(NamedTuple):
    """One instruction: its encoding and its stack signature (``None``: by rule)."""

    prefix: int | None
    code: int
    immediate: str
    pops: tuple[str, ...] | None = None
    pushes: tuple[str, ...] | None = None


def _sig(signature: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``"i32 f32 -> v128"`` -> ``(("i32", "f32"), ("v128",))``."""
    pops, pushes = signature.split("->")
    return tuple(pops.split()), tuple(pushes.split())


def _op(prefix: int | None, code: int, immediate: str, signature: str) -> Op:
    return Op(prefix, code, immediate, *_sig(signature))


def _rows(prefix: int | None, first: int, names: str, signature: str,
          immediate: str = NONE) -> dict[str, Op]:
    """Consecutive opcodes from ``first`` sharing one signature; '-' skips a code."""
    pops, pushes = _sig(signature)
    return {name: Op(prefix, first + i, immediate, pops, pushes)
            for i, name in enumerate(names.split()) if name != "-"}


_CONTROL = {
    "unreachable": Op(None, 0x00, NONE),
    "nop": _op(None, 0x01, NONE, "->"),
    "block": Op(None, 0x02, BLOCK),
    "loop": Op(None, 0x03, BLOCK),
    "if": Op(None, 0x04, BLOCK),
    "else": Op(None, 0x05, NONE),
    "end": Op(None, 0x0B, NONE),
    "br": Op(None, 0x0C, U32),
    "br_if": Op(None, 0x0D, U32),
    "return": Op(None, 0x0F, NONE),
    "call": Op(None, 0x10, U32),
    "drop": Op(None, 0x1A, NONE),
    "select": Op(None, 0x1B, NONE),
    "local.get": Op(None, 0x20, U32),
    "local.set": Op(None, 0x21, U32),
    "local.tee": Op(None, 0x22, U32),
    "global.get": Op(None, 0x23, U32),
    "global.set": Op(None, 0x24, U32),
}

_MEMORY = {
    **_rows(None, 0x28, "i32.load", "i32 -> i32", MEMARG),
    **_rows(None, 0x29, "i64.load", "i32 -> i64", MEMARG),
    **_rows(None, 0x2A, "f32.load", "i32 -> f32", MEMARG),
    **_rows(None, 0x2B, "f64.load", "i32 -> f64", MEMARG),
    **_rows(None, 0x2C, "i32.load8_s i32.load8_u i32.load16_s i32.load16_u", "i32 -> i32", MEMARG),
    **_rows(None, 0x34, "i64.load32_s", "i32 -> i64", MEMARG),
    **_rows(None, 0x36, "i32.store", "i32 i32 ->", MEMARG),
    **_rows(None, 0x37, "i64.store", "i32 i64 ->", MEMARG),
    **_rows(None, 0x38, "f32.store", "i32 f32 ->", MEMARG),
    **_rows(None, 0x39, "f64.store", "i32 f64 ->", MEMARG),
    **_rows(None, 0x3A, "i32.store8 i32.store16", "i32 i32 ->", MEMARG),
    "memory.size": _op(None, 0x3F, ZERO1, "-> i32"),
    "memory.grow": _op(None, 0x40, ZERO1, "i32 -> i32"),
    "i32.trunc_sat_f32_s": _op(0xFC, 0, NONE, "f32 -> i32"),
    "i64.trunc_sat_f32_s": _op(0xFC, 4, NONE, "f32 -> i64"),
    "memory.copy": _op(0xFC, 10, ZERO2, "i32 i32 i32 ->"),
    "memory.fill": _op(0xFC, 11, ZERO1, "i32 i32 i32 ->"),
}

_CONSTANTS = {
    "i32.const": _op(None, 0x41, I32, "-> i32"),
    "i64.const": _op(None, 0x42, I64, "-> i64"),
    "f32.const": _op(None, 0x43, F32, "-> f32"),
    "f64.const": _op(None, 0x44, F64, "-> f64"),
}

_NUMERIC = {
    **_rows(None, 0x45, "i32.eqz", "i32 -> i32"),
    **_rows(None, 0x46, "i32.eq i32.ne i32.lt_s i32.lt_u i32.gt_s i32.gt_u i32.le_s i32.le_u "
                        "i32.ge_s i32.ge_u", "i32 i32 -> i32"),
    **_rows(None, 0x50, "i64.eqz", "i64 -> i32"),
    **_rows(None, 0x51, "i64.eq i64.ne i64.lt_s i64.lt_u i64.gt_s i64.gt_u i64.le_s i64.le_u "
                        "i64.ge_s i64.ge_u", "i64 i64 -> i32"),
    **_rows(None, 0x5B, "f32.eq f32.ne f32.lt f32.gt f32.le f32.ge", "f32 f32 -> i32"),
    **_rows(None, 0x67, "i32.clz i32.ctz i32.popcnt", "i32 -> i32"),
    **_rows(None, 0x6A, "i32.add i32.sub i32.mul i32.div_s i32.div_u i32.rem_s i32.rem_u "
                        "i32.and i32.or i32.xor i32.shl i32.shr_s i32.shr_u i32.rotl i32.rotr",
            "i32 i32 -> i32"),
    **_rows(None, 0x7C, "i64.add i64.sub i64.mul i64.div_s i64.div_u i64.rem_s i64.rem_u "
                        "i64.and i64.or i64.xor i64.shl i64.shr_s i64.shr_u i64.rotl i64.rotr",
            "i64 i64 -> i64"),
    **_rows(None, 0x8B, "f32.abs f32.neg f32.ceil f32.floor f32.trunc f32.nearest f32.sqrt",
            "f32 -> f32"),
    **_rows(None, 0x92, "f32.add f32.sub f32.mul f32.div f32.min f32.max f32.copysign",
            "f32 f32 -> f32"),
    **_rows(None, 0xA7, "i32.wrap_i64", "i64 -> i32"),
    **_rows(None, 0xA8, "i32.trunc_f32_s", "f32 -> i32"),
    **_rows(None, 0xAC, "i64.extend_i32_s i64.extend_i32_u", "i32 -> i64"),
    **_rows(None, 0xB2, "f32.convert_i32_s f32.convert_i32_u", "i32 -> f32"),
    **_rows(None, 0xB4, "f32.convert_i64_s", "i64 -> f32"),
    **_rows(None, 0xBC, "i32.reinterpret_f32", "f32 -> i32"),
    **_rows(None, 0xBD, "i64.reinterpret_f64", "f64 -> i64"),
    **_rows(None, 0xBE, "f32.reinterpret_i32", "i32 -> f32"),
    **_rows(None, 0xBF, "f64.reinterpret_i64", "i64 -> f64"),
}

_SIMD = {
    **_rows(0xFD, 0x00, "v128.load v128.load8x8_s v128.load8x8_u", "i32 -> v128", MEMARG),
    **_rows(0xFD, 0x09, "v128.load32_splat", "i32 -> v128", MEMARG),
    **_rows(0xFD, 0x0B, "v128.store", "i32 v128 ->", MEMARG),
    "v128.const": _op(0xFD, 0x0C, V128, "-> v128"),
    "i8x16.shuffle": _op(0xFD, 0x0D, V128, "v128 v128 -> v128"),
    **_rows(0xFD, 0x0F, "i8x16.splat i16x8.splat i32x4.splat", "i32 -> v128"),
    "i32x4.extract_lane": _op(0xFD, 0x1B, LANE, "v128 -> i32"),
    "i64x2.extract_lane": _op(0xFD, 0x1D, LANE, "v128 -> i64"),
    **_rows(0xFD, 0x13, "f32x4.splat", "f32 -> v128"),
    "f32x4.extract_lane": _op(0xFD, 0x1F, LANE, "v128 -> f32"),
    "f32x4.replace_lane": _op(0xFD, 0x20, LANE, "v128 f32 -> v128"),
    **_rows(0xFD, 0x41, "f32x4.eq f32x4.ne f32x4.lt f32x4.gt f32x4.le f32x4.ge",
            "v128 v128 -> v128"),
    **_rows(0xFD, 0x4D, "v128.not", "v128 -> v128"),
    **_rows(0xFD, 0x4E, "v128.and v128.andnot v128.or v128.xor", "v128 v128 -> v128"),
    **_rows(0xFD, 0x52, "v128.bitselect", "v128 v128 v128 -> v128"),
    **_rows(0xFD, 0x53, "v128.any_true", "v128 -> i32"),
    **_rows(0xFD, 0x5C, "v128.load32_zero v128.load64_zero", "i32 -> v128", MEMARG),
    **_rows(0xFD, 0x65, "i8x16.narrow_i16x8_s i8x16.narrow_i16x8_u", "v128 v128 -> v128"),
    **_rows(0xFD, 0x67, "f32x4.ceil f32x4.floor f32x4.trunc f32x4.nearest", "v128 -> v128"),
    **_rows(0xFD, 0x6D, "i8x16.shr_u", "v128 i32 -> v128"),
    **_rows(0xFD, 0x6E, "i8x16.add", "v128 v128 -> v128"),
    **_rows(0xFD, 0x71, "i8x16.sub", "v128 v128 -> v128"),
    **_rows(0xFD, 0x85, "i16x8.narrow_i32x4_s", "v128 v128 -> v128"),
    **_rows(0xFD, 0x87, "i16x8.extend_low_i8x16_s i16x8.extend_high_i8x16_s "
                        "i16x8.extend_low_i8x16_u i16x8.extend_high_i8x16_u", "v128 -> v128"),
    **_rows(0xFD, 0xA7, "i32x4.extend_low_i16x8_s i32x4.extend_high_i16x8_s "
                        "i32x4.extend_low_i16x8_u i32x4.extend_high_i16x8_u", "v128 -> v128"),
    **_rows(0xFD, 0xAB, "i32x4.shl i32x4.shr_s i32x4.shr_u", "v128 i32 -> v128"),
    **_rows(0xFD, 0xAE, "i32x4.add", "v128 v128 -> v128"),
    **_rows(0xFD, 0xB1, "i32x4.sub", "v128 v128 -> v128"),
    **_rows(0xFD, 0xB5, "i32x4.mul", "v128 v128 -> v128"),
    **_rows(0xFD, 0xBA, "i32x4.dot_i16x8_s", "v128 v128 -> v128"),
    **_rows(0xFD, 0xE0, "f32x4.abs f32x4.neg - f32x4.sqrt", "v128 -> v128"),
    **_rows(0xFD, 0xE4, "f32x4.add f32x4.sub f32x4.mul f32x4.div f32x4.min f32x4.max "
                        "f32x4.pmin f32x4.pmax", "v128 v128 -> v128"),
    **_rows(0xFD, 0xF8, "i32x4.trunc_sat_f32x4_s - f32x4.convert_i32x4_s", "v128 -> v128"),
    **_rows(0xFD, 0x105, "f32x4.relaxed_madd f32x4.relaxed_nmadd", "v128 v128 v128 -> v128"),
    **_rows(0xFD, 0x113, "i32x4.relaxed_dot_i8x16_i7x16_add_s", "v128 v128 v128 -> v128"),
}

_ATOMIC = {  # NOTE: threads proposal; a memarg's alignment must be the natural one.
    "memory.atomic.notify": _op(0xFE, 0x00, MEMARG, "i32 i32 -> i32"),
    "memory.atomic.wait32": _op(0xFE, 0x01, MEMARG, "i32 i32 i64 -> i32"),
    "i32.atomic.load": _op(0xFE, 0x10, MEMARG, "i32 -> i32"),
    "i64.atomic.load": _op(0xFE, 0x11, MEMARG, "i32 -> i64"),
    "i32.atomic.store": _op(0xFE, 0x17, MEMARG, "i32 i32 ->"),
    "i64.atomic.store": _op(0xFE, 0x18, MEMARG, "i32 i64 ->"),
    "i32.atomic.rmw.add": _op(0xFE, 0x1E, MEMARG, "i32 i32 -> i32"),
    "i32.atomic.rmw.sub": _op(0xFE, 0x25, MEMARG, "i32 i32 -> i32"),
    "i64.atomic.rmw.cmpxchg": _op(0xFE, 0x49, MEMARG, "i32 i64 i64 -> i64"),
}

OPCODES: dict[str, Op] = {**_CONTROL, **_MEMORY, **_CONSTANTS, **_NUMERIC, **_SIMD, **_ATOMIC}

BY_CODE: dict[tuple[int | None, int], str] = {(op.prefix, op.code): name
                                              for name, op in OPCODES.items()}
"""The instruction name of each ``(prefix, code)``, for the decoder."""
