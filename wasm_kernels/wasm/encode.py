"""A WebAssembly binary encoder: function bodies from the opcode table, modules from sections."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .opcodes import BLOCK, F32, F64, I32, I64, LANE, MEMARG, NONE, OPCODES, U32, V128, ZERO1, ZERO2
from .types import VALUE_TYPES, FuncType, GlobalType, Limits, MemoryType

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
        align, offset = (tuple(args) + (0, 0))[:2]
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
    if kind == ZERO1:
        return b"\0"
    if kind == ZERO2:
        return b"\0\0"
    raise AssertionError(f"unknown immediate kind {kind!r}")


def instruction(op: str, *args: object) -> bytes:
    """Encode one instruction by its text-format name, e.g. ``instruction("i32.const", 4)``."""
    try:
        prefix, code, kind = OPCODES[op]
    except KeyError:
        raise ValueError(f"unknown instruction {op!r}") from None
    head = bytes([code]) if prefix is None else bytes([prefix]) + uleb(code)
    return head + _immediate(kind, args)


class Code:
    """A function body under construction: typed locals and an instruction stream."""

    def __init__(self, params: tuple[str, ...]):
        self.params = params
        self._locals: list[str] = []
        self._body = bytearray()

    def local(self, valtype: str) -> int:
        """Declare a new local of ``valtype`` and return its index."""
        if valtype not in VALUE_TYPES:
            raise ValueError(f"unknown value type {valtype!r}")
        self._locals.append(valtype)
        return len(self.params) + len(self._locals) - 1

    def emit(self, op: str, *args: object) -> Code:
        self._body += instruction(op, *args)
        return self

    def expression(self) -> bytes:
        """The body as a constant expression (no locals, no size prefix)."""
        return bytes(self._body) + instruction("end")

    def encode(self) -> bytes:
        groups: list[bytes] = []
        for valtype in self._locals:
            groups.append(uleb(1) + bytes([VALUE_TYPES[valtype]]))
        body = vector(groups) + bytes(self._body) + instruction("end")
        return uleb(len(body)) + body


def _functype(ty: FuncType) -> bytes:
    return (b"\x60" + vector([bytes([VALUE_TYPES[t]]) for t in ty.params])
            + vector([bytes([VALUE_TYPES[t]]) for t in ty.results]))


def _limits(limits: Limits, shared: bool = False) -> bytes:
    flags = (1 if limits.max is not None else 0) | (2 if shared else 0)
    return bytes([flags]) + uleb(limits.min) + (uleb(limits.max) if limits.max is not None else b"")


@dataclass
class ModuleBuilder:
    """Collects imports, functions, memories, exports, data and custom sections.

    Imports must be added before functions are defined, so function indices are final
    as soon as they are returned.
    """

    _types: list[FuncType] = field(default_factory=list)
    _imports: list[bytes] = field(default_factory=list)
    _imported_funcs: int = 0
    _funcs: list[tuple[int, Code]] = field(default_factory=list)
    _memories: list[bytes] = field(default_factory=list)
    _globals: list[bytes] = field(default_factory=list)
    _exports: list[bytes] = field(default_factory=list)
    _data: list[bytes] = field(default_factory=list)
    _customs: list[bytes] = field(default_factory=list)
    _start: int | None = None

    def _type_index(self, ty: FuncType) -> int:
        if ty not in self._types:
            self._types.append(ty)
        return self._types.index(ty)

    def import_func(self, module: str, field_name: str, ty: FuncType) -> int:
        if self._funcs:
            raise ValueError("imports must be added before functions are defined")
        self._imports.append(name(module) + name(field_name) + b"\x00"
                             + uleb(self._type_index(ty)))
        self._imported_funcs += 1
        return self._imported_funcs - 1

    def import_memory(self, module: str, field_name: str, ty: MemoryType) -> int:
        self._imports.append(name(module) + name(field_name) + b"\x02"
                             + _limits(ty.limits, ty.shared))
        return 0

    def add_memory(self, ty: MemoryType) -> int:
        self._memories.append(_limits(ty.limits, ty.shared))
        return len(self._memories) - 1

    def add_global(self, ty: GlobalType, init: Code) -> int:
        self._globals.append(bytes([VALUE_TYPES[ty.content], int(ty.mutable)])
                             + init.expression())
        return len(self._globals) - 1

    def add_function(self, ty: FuncType, code: Code, export: str | None = None) -> int:
        index = self._imported_funcs + len(self._funcs)
        self._funcs.append((self._type_index(ty), code))
        if export is not None:
            self.export(export, "func", index)
        return index

    def export(self, field_name: str, kind: str, index: int) -> None:
        kinds = {"func": 0, "table": 1, "memory": 2, "global": 3}
        self._exports.append(name(field_name) + bytes([kinds[kind]]) + uleb(index))

    def add_data(self, offset: int, data: bytes) -> None:
        """An active data segment for memory 0 at a constant ``offset``."""
        self._data.append(b"\x00" + instruction("i32.const", offset) + instruction("end")
                          + uleb(len(data)) + data)

    def set_start(self, func_index: int) -> None:
        self._start = func_index

    def add_custom(self, section_name: str, payload: bytes) -> None:
        self._customs.append(name(section_name) + payload)

    def encode(self) -> bytes:
        out = bytearray(MAGIC_AND_VERSION)

        def section(sid: int, payload: bytes) -> None:
            out.extend(bytes([sid]) + uleb(len(payload)) + payload)

        for custom in self._customs:
            section(0, custom)
        if self._types:
            section(1, vector([_functype(t) for t in self._types]))
        if self._imports:
            section(2, vector(self._imports))
        if self._funcs:
            section(3, vector([uleb(t) for t, _ in self._funcs]))
        if self._memories:
            section(5, vector(self._memories))
        if self._globals:
            section(6, vector(self._globals))
        if self._exports:
            section(7, vector(self._exports))
        if self._start is not None:
            section(8, uleb(self._start))
        if self._data:
            section(12, uleb(len(self._data)))
        if self._funcs:
            section(10, vector([code.encode() for _, code in self._funcs]))
        if self._data:
            section(11, vector(self._data))
        return bytes(out)
