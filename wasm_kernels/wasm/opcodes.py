"""The WebAssembly instruction table: one row per opcode drives the encoder.

Each row is ``name: (prefix, code, immediate)``. ``prefix`` is ``None`` for single-byte
opcodes, ``0xFC`` for the misc prefix and ``0xFD`` for SIMD (its code is a LEB128 u32).
``immediate`` names how the operands after the opcode are encoded (see ``encode.py``).
"""

from __future__ import annotations

NONE, U32, MEMARG, I32, I64, F32, F64, BLOCK, V128, LANE, ZERO1, ZERO2 = (
    "none", "u32", "memarg", "i32", "i64", "f32", "f64", "block", "v128", "lane", "zero1", "zero2",
)

_CONTROL = {
    "unreachable": (None, 0x00, NONE),
    "nop": (None, 0x01, NONE),
    "block": (None, 0x02, BLOCK),
    "loop": (None, 0x03, BLOCK),
    "if": (None, 0x04, BLOCK),
    "else": (None, 0x05, NONE),
    "end": (None, 0x0B, NONE),
    "br": (None, 0x0C, U32),
    "br_if": (None, 0x0D, U32),
    "return": (None, 0x0F, NONE),
    "call": (None, 0x10, U32),
    "drop": (None, 0x1A, NONE),
    "select": (None, 0x1B, NONE),
    "local.get": (None, 0x20, U32),
    "local.set": (None, 0x21, U32),
    "local.tee": (None, 0x22, U32),
    "global.get": (None, 0x23, U32),
    "global.set": (None, 0x24, U32),
}

_MEMORY = {
    "i32.load": (None, 0x28, MEMARG),
    "i64.load": (None, 0x29, MEMARG),
    "f32.load": (None, 0x2A, MEMARG),
    "f64.load": (None, 0x2B, MEMARG),
    "i32.load8_u": (None, 0x2D, MEMARG),
    "i32.load16_u": (None, 0x2F, MEMARG),
    "i32.store": (None, 0x36, MEMARG),
    "i64.store": (None, 0x37, MEMARG),
    "f32.store": (None, 0x38, MEMARG),
    "f64.store": (None, 0x39, MEMARG),
    "i32.store8": (None, 0x3A, MEMARG),
    "i32.store16": (None, 0x3B, MEMARG),
    "memory.size": (None, 0x3F, ZERO1),
    "memory.grow": (None, 0x40, ZERO1),
    "i32.trunc_sat_f32_s": (0xFC, 0, NONE),
    "i64.trunc_sat_f32_s": (0xFC, 4, NONE),
    "memory.copy": (0xFC, 10, ZERO2),
    "memory.fill": (0xFC, 11, ZERO1),
}

_CONSTANTS = {
    "i32.const": (None, 0x41, I32),
    "i64.const": (None, 0x42, I64),
    "f32.const": (None, 0x43, F32),
    "f64.const": (None, 0x44, F64),
}


def _rows(first: int, names: str) -> dict[str, tuple[int | None, int, str]]:
    """Consecutive no-immediate opcodes starting at ``first``; '-' skips a code."""
    return {name: (None, first + i, NONE) for i, name in enumerate(names.split()) if name != "-"}


def _simd_rows(first: int, names: str,
               immediate: str = NONE) -> dict[str, tuple[int | None, int, str]]:
    return {name: (0xFD, first + i, immediate) for i, name in enumerate(names.split())
            if name != "-"}


_NUMERIC = {
    **_rows(0x45, "i32.eqz i32.eq i32.ne i32.lt_s i32.lt_u i32.gt_s i32.gt_u i32.le_s i32.le_u "
                  "i32.ge_s i32.ge_u"),
    **_rows(0x50, "i64.eqz i64.eq i64.ne i64.lt_s i64.lt_u i64.gt_s i64.gt_u i64.le_s i64.le_u "
                  "i64.ge_s i64.ge_u"),
    **_rows(0x5B, "f32.eq f32.ne f32.lt f32.gt f32.le f32.ge"),
    **_rows(0x67, "i32.clz i32.ctz i32.popcnt i32.add i32.sub i32.mul i32.div_s i32.div_u "
                  "i32.rem_s i32.rem_u i32.and i32.or i32.xor i32.shl i32.shr_s i32.shr_u "
                  "i32.rotl i32.rotr"),
    **_rows(0x7C, "i64.add i64.sub i64.mul"),
    **_rows(0x8B, "f32.abs f32.neg f32.ceil f32.floor f32.trunc f32.nearest f32.sqrt f32.add "
                  "f32.sub f32.mul f32.div f32.min f32.max f32.copysign"),
    **_rows(0xA7, "i32.wrap_i64 i32.trunc_f32_s"),
    **_rows(0xAC, "i64.extend_i32_s i64.extend_i32_u"),
    **_rows(0xB2, "f32.convert_i32_s f32.convert_i32_u f32.convert_i64_s"),
    **_rows(0xBC, "i32.reinterpret_f32 i64.reinterpret_f64 f32.reinterpret_i32 "
                  "f64.reinterpret_i64"),
}

_SIMD = {
    "v128.load": (0xFD, 0x00, MEMARG),
    "v128.load32_splat": (0xFD, 0x09, MEMARG),
    "v128.store": (0xFD, 0x0B, MEMARG),
    "v128.const": (0xFD, 0x0C, V128),
    **_simd_rows(0x11, "i32x4.splat - f32x4.splat"),
    "f32x4.extract_lane": (0xFD, 0x1F, LANE),
    "f32x4.replace_lane": (0xFD, 0x20, LANE),
    **_simd_rows(0x41, "f32x4.eq f32x4.ne f32x4.lt f32x4.gt f32x4.le f32x4.ge"),
    **_simd_rows(0x4D, "v128.not v128.and v128.andnot v128.or v128.xor v128.bitselect "
                       "v128.any_true"),
    "v128.load32_zero": (0xFD, 0x5C, MEMARG),
    **_simd_rows(0x67, "f32x4.ceil f32x4.floor f32x4.trunc f32x4.nearest"),
    **_simd_rows(0xAB, "i32x4.shl i32x4.shr_s i32x4.shr_u i32x4.add"),
    "i32x4.sub": (0xFD, 0xB1, NONE),
    "i32x4.mul": (0xFD, 0xB5, NONE),
    **_simd_rows(0xE0, "f32x4.abs f32x4.neg - f32x4.sqrt f32x4.add f32x4.sub f32x4.mul "
                       "f32x4.div f32x4.min f32x4.max f32x4.pmin f32x4.pmax"),
    **_simd_rows(0xF8, "i32x4.trunc_sat_f32x4_s - f32x4.convert_i32x4_s"),
    **_simd_rows(0x105, "f32x4.relaxed_madd f32x4.relaxed_nmadd"),
    "i8x16.shuffle": (0xFD, 0x0D, V128),
}

OPCODES: dict[str, tuple[int | None, int, str]] = {
    **_CONTROL, **_MEMORY, **_CONSTANTS, **_NUMERIC, **_SIMD,
}
