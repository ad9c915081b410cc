"""The WebAssembly binary encoding of values and instructions (from the opcode table)."""

from __future__ import annotations

import struct

from .opcodes import (
    BLOCK,
    F32,
    F64,
    I32,
    I64,
    LANE,
    MEMARG,
    NONE,
    OPCODES,
    U32,
    V128,
    ZERO1,
    ZERO2,
    Op,
)
from .types import VALUE_TYPES

MAGIC_AND_VERSION = b"\0asm\x01\0\0\0"


def uleb(value: int) -> bytes:
    """Unsigned LEB128."""
    if value < 0:
        raise ValueError(f"uleb of a negative value {value!r}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def sleb(value: int) -> bytes:
    """Signed LEB128."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        done = (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40)
        out.append(byte if done else byte | 0x80)
        if done:
            return bytes(out)


def name(text: str) -> bytes:
    raw = text.encode()
    return uleb(len(raw)) + raw


def vector(items: list[bytes]) -> bytes:
    return uleb(len(items)) + b"".join(items)


def _immediate(kind: str, args: tuple) -> bytes:
    if kind == NONE:
        return b""
    if kind == U32:
        return uleb(args[0])
    if kind == MEMARG:
        # NOTE: a third immediate is the memory index (multi-memory): flag 0x40 on the
        # alignment, then the index, then the offset.
        align, offset, memory = (tuple(args) + (0, 0, 0))[:3]
        if memory:
            return uleb(align | 0x40) + uleb(memory) + uleb(offset)
        return uleb(align) + uleb(offset)
    if kind == I32:
        value = args[0]
        return sleb(value - (1 << 32) if value >= 1 << 31 else value)
    if kind == I64:
        return sleb(args[0])
    if kind == F32:
        return struct.pack("<f", args[0])
    if kind == F64:
        return struct.pack("<d", args[0])
    if kind == BLOCK:
        return b"\x40" if not args or args[0] is None else bytes([VALUE_TYPES[args[0]]])
    if kind == V128:
        raw = bytes(args[0])
        if len(raw) != 16:
            raise ValueError(f"v128.const needs 16 bytes, got {len(raw)}")
        return raw
    if kind == LANE:
        return bytes([args[0]])
    if kind == ZERO1:  # NOTE: a memory index (multi-memory), 0 unless given
        return uleb(args[0]) if args else b"\0"
    if kind == ZERO2:  # NOTE: memory.copy's destination and source memories
        return uleb(args[0]) + uleb(args[1]) if args else b"\0\0"
    raise AssertionError(f"unknown immediate kind {kind!r}")


def instruction(op: str, *args: object) -> bytes:
    """Encode one instruction by its text-format name, e.g. ``instruction("i32.const", 4)``.

    Raises:
        ValueError: an unknown instruction or a malformed immediate.
    """
    try:
        row = OPCODES[op]
    except KeyError:
        raise ValueError(f"unknown instruction {op!r}") from None
    return _encode(row, args)


def _encode(row: Op, args: tuple) -> bytes:
    head = bytes([row.code]) if row.prefix is None else bytes([row.prefix]) + uleb(row.code)
    return head + _immediate(row.immediate, args)
