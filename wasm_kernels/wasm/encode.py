"""A WebAssembly binary encoder: function bodies from the opcode table, modules from sections."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

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
from .types import VALUE_TYPES, FuncType, GlobalType, Limits, MemoryType
from .validate import Callees, StackCheck, WasmTypeError

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


_ENCODED: dict[tuple[str, tuple], bytes] = {}
"""Encodings of the instructions emitted so far: kernels repeat a few thousand distinct ones
(``local.get 5``, ``i32.const 4``) hundreds of thousands of times."""
_UNCACHED = frozenset(name for name, row in OPCODES.items() if row.immediate in (F32, F64))
"""Float immediates are never looked up: ``0.0 == -0.0`` would find the other's bytes."""


def _encode_new(op: str, args: tuple) -> bytes:
    encoded = _ENCODED[op, args] = instruction(op, *args)
    return encoded


class Code:
    """A function body under construction: typed locals and an instruction list, checked
    against the value stack as each instruction is added (``validate.StackCheck``).

    Locals and parameters may have names (``local("i32", "row")``, ``names=``), which
    ``get``/``set``/``tee`` accept instead of indices. ``block``, ``loop`` and ``if_`` are
    context managers that close what they open.

    Args:
        params: the parameter types.
        results: the result types the body must leave on the stack.
        names: names of the first parameters, in order.
        funcs: the function index space ``call`` may use (``ModuleBuilder.code`` passes it).
        globals_: the globals ``global.get``/``global.set`` may use.
    """

    def __init__(self, params: tuple[str, ...], results: tuple[str, ...] = (), *,
                 names: Sequence[str] = (), funcs: Callees | None = None,
                 globals_: Sequence[GlobalType] = ()):
        self.params = tuple(params)
        self.results = tuple(results)
        self.instructions: list[tuple[str, tuple]] = []
        self._locals: list[str] = []
        self._types = list(self.params)
        self.names: dict[str, int] = {name: i for i, name in enumerate(names)}
        self._body = bytearray()
        self._check = StackCheck(self._types, self.results, funcs, globals_)

    @property
    def stack(self) -> tuple[str | None, ...]:
        """The value types on the stack of the innermost open block (``None``: unknown)."""
        frames = self._check.frames
        return tuple(self._check.values[frames[-1].height:]) if frames else ()

    @property
    def locals(self) -> tuple[str, ...]:
        """The declared locals' types (after the parameters)."""
        return tuple(self._locals)

    def local(self, valtype: str, name: str | None = None) -> int:
        """Declare a new local of ``valtype`` (called ``name``, if given) and return its index.

        Raises:
            ValueError: an unknown value type, or a name already taken.
        """
        if valtype not in VALUE_TYPES:
            raise ValueError(f"unknown value type {valtype!r}")
        self._locals.append(valtype)
        self._types.append(valtype)
        if name is not None:
            self.name(len(self._types) - 1, name)
        return len(self._types) - 1

    def name(self, index: int, name: str) -> None:
        """Name parameter or local ``index`` (for ``get``/``set``/``tee`` and the name section).

        Raises:
            ValueError: no such local, or the name is taken.
        """
        if not 0 <= index < len(self._types):
            raise ValueError(f"no local {index}; the function has {len(self._types)}")
        if name in self.names:
            raise ValueError(f"local {name!r} is already declared (index {self.names[name]})")
        self.names[name] = index

    def emit(self, op: str, *args: object) -> Code:
        """Append instruction ``op`` with immediates ``args``, e.g. ``emit("v128.load", 2, 16)``.

        Raises:
            ValueError: an unknown instruction or a malformed immediate.
            WasmTypeError: the instruction does not fit the stack (naming what it expected
                and what was found), or names a missing local, global, function or label.
        """
        if op in _UNCACHED:
            encoded = instruction(op, *args)
        else:
            encoded = _ENCODED.get((op, args)) or _encode_new(op, args)
        self._check.step(op, args)
        self.instructions.append((op, args))
        self._body += encoded
        return self

    def _index(self, local: str | int) -> int:
        if isinstance(local, int):
            return local
        try:
            return self.names[local]
        except KeyError:
            raise ValueError(f"no local called {local!r}; named: {sorted(self.names)}") from None

    def get(self, *locals_: str | int) -> Code:
        """Push each local or parameter, by name or index."""
        for local in locals_:
            self.emit("local.get", self._index(local))
        return self

    def set(self, local: str | int) -> Code:
        """Pop into a local, by name or index."""
        return self.emit("local.set", self._index(local))

    def tee(self, local: str | int) -> Code:
        """Store the top of the stack in a local, by name or index, keeping it."""
        return self.emit("local.tee", self._index(local))

    @contextmanager
    def block(self, result: str | None = None) -> Iterator[Code]:
        """``block ... end``."""
        self.emit("block", *(() if result is None else (result,)))
        yield self
        self.emit("end")

    @contextmanager
    def loop(self) -> Iterator[Code]:
        """``block { loop { body; br 0 } }``: ``br 1`` breaks out, ``br 0`` continues."""
        self.emit("block").emit("loop")
        yield self
        self.emit("br", 0).emit("end").emit("end")

    @contextmanager
    def if_(self, result: str | None = None) -> Iterator[Code]:
        """``if ... end`` on the i32 on top of the stack."""
        self.emit("if", *(() if result is None else (result,)))
        yield self
        self.emit("end")

    def close(self) -> None:
        """Check that the body ends with exactly its results on the stack and every block
        closed; nothing can be added after. Encoding closes the body implicitly.

        Raises:
            WasmTypeError: a block is still open, or the stack does not hold the results.
        """
        if self._check.closed:
            return
        if len(self._check.frames) > 1:
            open_ = [frame.kind for frame in self._check.frames[1:]]
            raise WasmTypeError(f"end of function: {len(open_)} block(s) still open: {open_}")
        self._check.step("end", ())

    def expression(self) -> bytes:
        """The body as a constant expression (no locals, no size prefix).

        Raises:
            WasmTypeError: the stack does not hold exactly the results.
        """
        self.close()
        return bytes(self._body) + instruction("end")

    def encode(self) -> bytes:
        """The body as the code section holds it: size, locals, instructions, ``end``.

        Raises:
            WasmTypeError: a block is still open, or the stack does not hold the results.
        """
        self.close()
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


def _name_map(names: dict[int, str]) -> bytes:
    return vector([uleb(index) + name(names[index]) for index in sorted(names)])


def name_section(module: str | None, functions: dict[int, str],
                 locals_: dict[int, dict[int, str]]) -> bytes:
    """The payload of the ``name`` custom section: the module's name, its functions' names
    and their locals' names (subsections 0, 1 and 2), as debuggers and engines read them."""
    subsections = []
    if module is not None:
        subsections.append((0, name(module)))
    if functions:
        subsections.append((1, _name_map(functions)))
    if any(locals_.values()):
        subsections.append((2, vector([uleb(f) + _name_map(locals_[f])
                                       for f in sorted(locals_) if locals_[f]])))
    return b"".join(bytes([sid]) + uleb(len(payload)) + payload for sid, payload in subsections)


@dataclass
class ModuleBuilder:
    """Collects imports, functions, memories, exports, data and custom sections, and names
    the module and its functions (and named locals) in a ``name`` section.

    Imports must be added before functions are defined, so function indices are final
    as soon as they are returned.

    Args:
        name: the module's name, which traps and debuggers show (``name!function``).
    """

    name: str | None = None
    _types: list[FuncType] = field(default_factory=list)
    _imports: list[bytes] = field(default_factory=list)
    _imported_funcs: int = 0
    _functions: list[tuple[str | None, FuncType]] = field(default_factory=list)
    _funcs: list[tuple[int, Code]] = field(default_factory=list)
    _memories: list[bytes] = field(default_factory=list)
    _global_types: list[GlobalType] = field(default_factory=list)
    _globals: list[bytes] = field(default_factory=list)
    _exports: list[bytes] = field(default_factory=list)
    _data: list[bytes] = field(default_factory=list)
    _customs: list[bytes] = field(default_factory=list)
    _start: int | None = None

    def _type_index(self, ty: FuncType) -> int:
        if ty not in self._types:
            self._types.append(ty)
        return self._types.index(ty)

    def code(self, ty: FuncType, names: Sequence[str] = ()) -> Code:
        """An empty body of type ``ty`` that may call this module's functions and use its
        globals (those added so far, and later ones)."""
        return Code(ty.params, ty.results, names=names, funcs=self._functions,
                    globals_=self._global_types)

    def import_func(self, module: str, field_name: str, ty: FuncType) -> int:
        """Import a function (named ``field_name`` in the name section); returns its index.

        Raises:
            ValueError: functions were already defined.
        """
        if self._funcs:
            raise ValueError("imports must be added before functions are defined")
        self._imports.append(name(module) + name(field_name) + b"\x00"
                             + uleb(self._type_index(ty)))
        self._imported_funcs += 1
        self._functions.append((field_name, ty))
        return self._imported_funcs - 1

    def import_memory(self, module: str, field_name: str, ty: MemoryType) -> int:
        self._imports.append(name(module) + name(field_name) + b"\x02"
                             + _limits(ty.limits, ty.shared))
        return 0

    def add_memory(self, ty: MemoryType) -> int:
        self._memories.append(_limits(ty.limits, ty.shared))
        return len(self._memories) - 1

    def add_global(self, ty: GlobalType, init: Code) -> int:
        """Define a global initialised by the constant expression ``init``.

        Raises:
            WasmTypeError: ``init`` does not leave exactly one ``ty.content`` value.
        """
        if init.results != (ty.content,):
            raise WasmTypeError(f"a {ty} is initialised by an expression of type "
                                f"[{' '.join(init.results)}]; build it as "
                                f"Code((), ({ty.content!r},))")
        self._globals.append(bytes([VALUE_TYPES[ty.content], int(ty.mutable)])
                             + init.expression())
        self._global_types.append(ty)
        return len(self._globals) - 1

    def add_function(self, ty: FuncType, code: Code, export: str | None = None,
                     name: str | None = None) -> int:
        """Define a function (``name``, else ``export``, in the name section); returns its
        index.

        Raises:
            WasmTypeError: ``code`` was built for another type, or does not end with its
                results on the stack.
        """
        if (code.params, code.results) != (ty.params, ty.results):
            raise WasmTypeError(f"function {name or export or ''} of type {ty} has a body "
                                f"built for {FuncType(code.params, code.results)}")
        code.close()
        index = self._imported_funcs + len(self._funcs)
        self._funcs.append((self._type_index(ty), code))
        self._functions.append((name or export, ty))
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
        names = self._names()
        if names:
            section(0, name("name") + names)
        return bytes(out)

    def _names(self) -> bytes:
        functions = {i: n for i, (n, _) in enumerate(self._functions) if n is not None}
        locals_ = {self._imported_funcs + i: {index: n for n, index in code.names.items()}
                   for i, (_, code) in enumerate(self._funcs)}
        return name_section(self.name, functions, locals_)
