"""Decodes a whole module, function bodies included, into instruction lists of the same
form ``Code.instructions`` holds (``(name, immediates)``), driven by the opcode table.

``read_module`` (``decode.py``) reads only a module's interface; this reads everything the
text printer shows, for the kinds of module wasmnn and wabt emit (no tables, tags or
element segments).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .decode import WasmFormatError, _Reader, read_module
from .opcodes import (
    BLOCK,
    BY_CODE,
    F32,
    F64,
    I32,
    I64,
    LANE,
    MEMARG,
    OPCODES,
    U32,
    V128,
    ZERO1,
    ZERO2,
)
from .types import FuncType, GlobalType, MemoryType

Instruction = tuple[str, tuple]


@dataclass
class Function:
    """A defined function: its type index, declared locals and body."""

    type_index: int
    locals: list[str]
    instructions: list[Instruction]


@dataclass
class Module:
    """Everything the printer shows; indices are as in the binary."""

    types: list[FuncType] = field(default_factory=list)
    imports: list[tuple[str, str, int | MemoryType | GlobalType]] = field(default_factory=list)
    """(module, name, type index of a function | memory type | global type)."""
    functions: list[Function] = field(default_factory=list)
    memories: list[MemoryType] = field(default_factory=list)
    globals: list[tuple[GlobalType, list[Instruction]]] = field(default_factory=list)
    exports: list[tuple[str, str, int]] = field(default_factory=list)
    start: int | None = None
    data: list[tuple[list[Instruction], bytes]] = field(default_factory=list)
    customs: list[tuple[str, bytes]] = field(default_factory=list)
    name: str | None = None
    function_names: dict[int, str] = field(default_factory=dict)
    local_names: dict[int, dict[int, str]] = field(default_factory=dict)

    @property
    def imported_functions(self) -> int:
        return sum(isinstance(ty, int) for _, _, ty in self.imports)


class _CodeReader(_Reader):
    def sleb(self, bits: int) -> int:
        result = shift = 0
        for _ in range(-(-bits // 7)):
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result - (1 << shift) if b & 0x40 else result
        raise self.fail("integer representation too long")

    def immediates(self, kind: str) -> tuple:
        if kind in (U32, LANE):
            return (self.u32() if kind == U32 else self.byte(),)
        if kind == MEMARG:
            align = self.u32()
            if align & 0x40:  # NOTE: multi-memory: the memory index follows
                memory = self.u32()
                return align & ~0x40, self.u32(), memory
            return align, self.u32()
        if kind in (I32, I64):
            return (self.sleb(32 if kind == I32 else 64),)
        if kind in (F32, F64):
            return struct.unpack("<f" if kind == F32 else "<d", self.bytes(4 if kind == F32 else 8))
        if kind == BLOCK:
            if self.data[self.pos] == 0x40:
                self.pos += 1
                return ()
            return (self.valtype(),)
        if kind == V128:
            return (self.bytes(16),)
        self.bytes({ZERO1: 1, ZERO2: 2}.get(kind, 0))
        return ()

    def instruction(self) -> Instruction:
        first = self.byte()
        key = (first, self.u32()) if first in (0xFC, 0xFD, 0xFE) else (None, first)
        name = BY_CODE.get(key)
        if name is None:
            code = f"0x{first:02x}" + (f" {key[1]}" if key[0] is not None else "")
            raise self.fail(f"unsupported opcode {code}")
        return name, self.immediates(OPCODES[name].immediate)

    def expression(self) -> list[Instruction]:
        """Instructions up to the ``end`` that closes the expression (not included)."""
        out: list[Instruction] = []
        depth = 0
        while True:
            op, args = self.instruction()
            if op == "end" and depth == 0:
                return out
            depth += {"block": 1, "loop": 1, "if": 1, "end": -1}.get(op, 0)
            out.append((op, args))

    def import_type(self, kind: int) -> int | MemoryType | GlobalType:
        """A function import's type index, or a memory's or global's type."""
        if kind == 0:
            return self.u32()
        if kind == 2:
            return MemoryType(*self.limits())
        if kind == 3:
            return GlobalType(self.valtype(), bool(self.byte()))
        raise self.fail(f"import kind {kind} is not shown by the printer")

    def function(self) -> Function:
        body = _CodeReader(self.bytes(self.u32()), self.base + self.pos)
        locals_: list[str] = []
        for _ in range(body.u32()):
            count = body.u32()
            locals_ += [body.valtype()] * count
        instructions = body.expression()
        if body.pos != len(body.data):
            raise body.fail("function body continues after its final end")
        return Function(0, locals_, instructions)


def _names(module: Module, payload: bytes) -> None:
    reader = _CodeReader(payload)
    while reader.pos < len(reader.data):
        sid = reader.byte()
        sub = _CodeReader(reader.bytes(reader.u32()))
        if sid == 0:
            module.name = sub.name()
        elif sid == 1:
            module.function_names = {sub.u32(): sub.name() for _ in range(sub.u32())}
        elif sid == 2:
            for _ in range(sub.u32()):
                func = sub.u32()
                module.local_names[func] = {sub.u32(): sub.name() for _ in range(sub.u32())}


def _section(module: Module, sid: int, body: _CodeReader, type_indices: list[int]) -> None:
    if sid == 1:
        module.types = [body.functype() for _ in range(body.u32())]
    elif sid == 2:
        for _ in range(body.u32()):
            where, name, kind = body.name(), body.name(), body.byte()
            module.imports.append((where, name, body.import_type(kind)))
    elif sid == 3:
        type_indices.extend(body.u32() for _ in range(body.u32()))
    elif sid == 5:
        module.memories = [MemoryType(*body.limits()) for _ in range(body.u32())]
    elif sid == 6:
        for _ in range(body.u32()):
            global_type = GlobalType(body.valtype(), bool(body.byte()))
            module.globals.append((global_type, body.expression()))
    elif sid == 7:
        kinds = {0: "func", 1: "table", 2: "memory", 3: "global"}
        module.exports = [(body.name(), kinds[body.byte()], body.u32())
                          for _ in range(body.u32())]
    elif sid == 8:
        module.start = body.u32()
    elif sid == 10:
        module.functions = [body.function() for _ in range(body.u32())]
        for function, type_index in zip(module.functions, type_indices):
            function.type_index = type_index
    elif sid == 11:
        for _ in range(body.u32()):
            if body.u32() != 0:
                raise body.fail("only active data segments of memory 0 are shown")
            module.data.append((body.expression(), body.bytes(body.u32())))
    elif sid != 12:
        raise body.fail(f"section {sid} is not shown by the printer")


def disassemble(data: bytes) -> Module:
    """Decode every section of ``data`` the printer shows.

    Raises:
        WasmFormatError: the bytes are malformed, or use something the printer does not
            show (tables, tags, element segments, an opcode outside the table).
    """
    read_module(data)  # the interface first: its checks give the precise messages
    module = Module()
    reader = _CodeReader(bytes(data))
    reader.pos = 8
    type_indices: list[int] = []
    while reader.pos < len(reader.data):
        sid = reader.byte()
        size = reader.u32()
        body = _CodeReader(reader.bytes(size), reader.pos - size)
        if sid == 0:
            section_name = body.name()
            payload = body.data[body.pos:]
            if section_name == "name":
                _names(module, payload)
            else:
                module.customs.append((section_name, payload))
        else:
            _section(module, sid, body, type_indices)
    if len(type_indices) != len(module.functions):
        raise WasmFormatError(f"{len(type_indices)} functions declared but "
                              f"{len(module.functions)} bodies")
    return module
