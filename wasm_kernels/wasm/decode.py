"""Reads the interface of a WebAssembly binary: imports, exports and custom sections.

Only the sections that describe a module's interface are decoded; code is skipped. Every
read is bounds-checked, so a truncated or hostile file raises ``WasmFormatError`` naming
the byte offset instead of anything worse.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .encode import MAGIC_AND_VERSION
from .types import (
    VALUE_TYPE_NAMES,
    ExternType,
    FuncType,
    GlobalType,
    Limits,
    MemoryType,
    TableType,
    TagType,
)

SECTION_NAMES = {0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory",
                 6: "global", 7: "export", 8: "start", 9: "element", 10: "code", 11: "data",
                 12: "datacount", 13: "tag"}


class WasmFormatError(ValueError):
    """The bytes are not a well-formed WebAssembly binary."""


@dataclass(frozen=True)
class Import:
    module: str
    name: str
    type: ExternType


@dataclass(frozen=True)
class Export:
    name: str
    kind: str
    type: ExternType


@dataclass
class ModuleInfo:
    """The interface of a module: what it imports, exports and carries in custom sections."""

    imports: list[Import] = field(default_factory=list)
    exports: list[Export] = field(default_factory=list)
    customs: list[tuple[str, bytes]] = field(default_factory=list)
    memories: list[MemoryType] = field(default_factory=list)
    """The memories the module defines itself (not its imported ones)."""
    tables: list[TableType] = field(default_factory=list)
    """The tables the module defines itself (not its imported ones)."""

    def custom(self, section_name: str) -> bytes | None:
        """The payload of the first custom section called ``section_name``, if any."""
        return next((data for n, data in self.customs if n == section_name), None)


class _Reader:
    def __init__(self, data: bytes, base: int = 0):
        self.data = data
        self.pos = 0
        self.base = base

    def fail(self, what: str) -> WasmFormatError:
        return WasmFormatError(f"{what} at byte offset {self.base + self.pos}")

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("unexpected end of data")
        self.pos += 1
        return self.data[self.pos - 1]

    def bytes(self, count: int) -> bytes:
        if count < 0 or self.pos + count > len(self.data):
            raise self.fail(f"unexpected end of data (wanted {count} bytes)")
        self.pos += count
        return self.data[self.pos - count:self.pos]

    def u32(self) -> int:
        result = shift = 0
        for _ in range(5):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                if result >= 1 << 32:
                    raise self.fail("integer too large")
                return result
            shift += 7
        raise self.fail("integer representation too long")

    def skip_leb(self) -> None:
        for _ in range(10):
            if not self.byte() & 0x80:
                return
        raise self.fail("integer representation too long")

    def name(self) -> str:
        raw = self.bytes(self.u32())
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise self.fail("malformed UTF-8 encoding") from None

    def valtype(self) -> str:
        code = self.byte()
        if code not in VALUE_TYPE_NAMES:
            self.pos -= 1
            raise self.fail(f"invalid value type 0x{code:02x}")
        return VALUE_TYPE_NAMES[code]

    def limits(self) -> tuple[Limits, bool]:
        flags = self.byte()
        if flags & ~0x07:
            raise self.fail(f"invalid limits flags 0x{flags:02x}")
        if flags & 0x04:
            raise self.fail("64-bit memories are not supported")
        low = self.u32()
        high = self.u32() if flags & 1 else None
        return Limits(low, high), bool(flags & 2)

    def functype(self) -> FuncType:
        if self.byte() != 0x60:
            self.pos -= 1
            raise self.fail("expected a function type (0x60)")
        params = tuple(self.valtype() for _ in range(self.u32()))
        results = tuple(self.valtype() for _ in range(self.u32()))
        return FuncType(params, results)

    def tagtype(self, types: list[FuncType]) -> TagType:
        attribute, index = self.byte(), self.u32()
        if attribute != 0:
            raise self.fail(f"invalid tag attribute {attribute} (only 0, exception, exists)")
        if index >= len(types):
            raise self.fail(f"tag uses unknown type {index}")
        if types[index].results:
            raise self.fail(f"tag type {index} has results {types[index].results}")
        return TagType(types[index].params)

    def const_expr(self) -> None:
        """Skip a constant expression up to and including its ``end``."""
        while True:
            op = self.byte()
            if op == 0x0B:
                return
            if op in (0x41, 0x42, 0x23, 0xD2):
                self.skip_leb()
            elif op == 0x43:
                self.bytes(4)
            elif op == 0x44:
                self.bytes(8)
            elif op == 0xD0:
                self.byte()
            elif op == 0xFD:
                self.u32()
                self.bytes(16)
            elif op not in (0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E):
                raise self.fail(f"unsupported constant expression opcode 0x{op:02x}")


def read_module(data: bytes) -> ModuleInfo:
    """Decode the interface of ``data``.

    Raises:
        WasmFormatError: the bytes are not a WebAssembly binary, or are truncated or malformed.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < 8 or data[:4] != MAGIC_AND_VERSION[:4]:
        raise WasmFormatError("not a WebAssembly binary (missing the '\\0asm' magic number)")
    if data[4:8] != MAGIC_AND_VERSION[4:]:
        raise WasmFormatError(f"unsupported WebAssembly version {data[4:8].hex()} "
                              "(only version 1 is supported)")
    reader = _Reader(data)
    reader.pos = 8
    info = ModuleInfo()
    types: list[FuncType] = []
    funcs: list[FuncType] = []
    tables: list[TableType] = []
    memories: list[MemoryType] = []
    globals_: list[GlobalType] = []
    tags: list[TagType] = []
    raw_exports: list[tuple[str, int, int]] = []
    while reader.pos < len(data):
        sid = reader.byte()
        size = reader.u32()
        body = _Reader(reader.bytes(size), reader.pos - size)
        if sid not in SECTION_NAMES:
            raise body.fail(f"unknown section id {sid}")
        if sid == 0:
            info.customs.append((body.name(), body.data[body.pos:]))
            continue
        if sid == 1:
            types = [body.functype() for _ in range(body.u32())]
        elif sid == 2:
            for _ in range(body.u32()):
                module, field_name, kind = body.name(), body.name(), body.byte()
                ty: ExternType
                if kind == 0:
                    index = body.u32()
                    if index >= len(types):
                        raise body.fail(f"import {module}.{field_name} uses unknown type {index}")
                    ty = types[index]
                    funcs.append(ty)
                elif kind == 1:
                    element = body.valtype()
                    limits, _ = body.limits()
                    ty = TableType(element, limits)
                    tables.append(ty)
                elif kind == 2:
                    limits, shared = body.limits()
                    ty = MemoryType(limits, shared)
                    memories.append(ty)
                elif kind == 3:
                    ty = GlobalType(body.valtype(), bool(body.byte()))
                    globals_.append(ty)
                elif kind == 4:
                    ty = body.tagtype(types)
                    tags.append(ty)
                else:
                    raise body.fail(f"invalid import kind {kind}")
                info.imports.append(Import(module, field_name, ty))
        elif sid == 3:
            for _ in range(body.u32()):
                index = body.u32()
                if index >= len(types):
                    raise body.fail(f"function uses unknown type {index}")
                funcs.append(types[index])
        elif sid == 4:
            for _ in range(body.u32()):
                element = body.valtype()
                tables.append(TableType(element, body.limits()[0]))
                info.tables.append(tables[-1])
        elif sid == 5:
            for _ in range(body.u32()):
                limits, shared = body.limits()
                memories.append(MemoryType(limits, shared))
                info.memories.append(memories[-1])
        elif sid == 6:
            for _ in range(body.u32()):
                globals_.append(GlobalType(body.valtype(), bool(body.byte())))
                body.const_expr()
        elif sid == 7:
            for _ in range(body.u32()):
                raw_exports.append((body.name(), body.byte(), body.u32()))
        elif sid == 13:
            tags.extend(body.tagtype(types) for _ in range(body.u32()))
    spaces: dict[int, tuple[str, list]] = {0: ("func", funcs), 1: ("table", tables),
                                           2: ("memory", memories), 3: ("global", globals_),
                                           4: ("tag", tags)}
    for export_name, kind, index in raw_exports:
        if kind not in spaces:
            raise WasmFormatError(f"export {export_name!r} has invalid kind {kind}")
        kind_name, space = spaces[kind]
        if index >= len(space):
            raise WasmFormatError(f"export {export_name!r} names {kind_name} {index}, "
                                  f"but the module has {len(space)}")
        info.exports.append(Export(export_name, kind_name, space[index]))
    return info
