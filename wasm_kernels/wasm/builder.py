"""Modules from sections: imports, functions, memories, globals, exports, data, custom
sections and the name section."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .code import Code
from .encode import MAGIC_AND_VERSION, instruction, name, uleb, vector
from .types import VALUE_TYPES, FuncType, GlobalType, Limits, MemoryType
from .validate import WasmTypeError


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
