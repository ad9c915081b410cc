"""A WAVM-style linker: resolvers answer imports by name and expected type; every problem is
collected into one ``LinkResult`` before anything is instantiated.

Types are compared as our own ``ExternType`` values read from the binaries, never through
wasmtime-py (which aborts the process when it reads a ``v128`` signature). Matching follows
the spec's import subtyping: functions and globals match exactly (value types and
mutability), memories and tables by limits, where the minimum is the *current* size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import wasmtime

from wasi_intrinsics import IntrinsicInstance, IntrinsicModule
from wasm_kernels.wasm import (
    ExternType,
    FuncType,
    GlobalType,
    Import,
    Limits,
    MemoryType,
    ModuleInfo,
    TableType,
    is_subtype,
)
from wasm_kernels.wasm.types import TagType

from .errors import LinkError, Trap


@dataclass(frozen=True)
class Resolved:
    """An extern that answers an import, with the type it was declared with."""

    extern: Any
    type: ExternType


Exports = Mapping[str, Resolved]


class Resolver(Protocol):
    """Answers one import: the extern for ``module.name``, or ``None`` when it has none.
    ``expected`` is the type the importing module declares, for resolvers that build
    externs on demand (``StubResolver``); the linker checks the answer's type itself."""

    def resolve(self, module: str, name: str, expected: ExternType) -> Resolved | None: ...


class NullResolver:
    """Resolves nothing: every import is reported missing."""

    def resolve(self, module: str, name: str, expected: ExternType) -> Resolved | None:
        return None


class RegistryResolver:
    """Named export sets: an instantiated module, an intrinsic instance, or plain externs."""

    def __init__(self) -> None:
        self._modules: dict[str, Exports] = {}

    def register(self, module: str, exports: Exports | IntrinsicInstance) -> None:
        """Make ``exports`` importable as ``module`` (replacing any earlier registration).

        Raises:
            TypeError: ``exports`` is neither an ``IntrinsicInstance`` nor a mapping of
                names to ``Resolved``.
        """
        if isinstance(exports, IntrinsicInstance):
            exports = {n: Resolved(exports[n], exports.types[n]) for n in exports}
        elif not isinstance(exports, Mapping) or not all(
                isinstance(r, Resolved) for r in exports.values()):
            raise TypeError(f"register({module!r}, ...) expected an IntrinsicInstance or a "
                            f"mapping of names to Resolved, got {type(exports).__name__}")
        self._modules[module] = dict(exports)

    def __contains__(self, module: str) -> bool:
        return module in self._modules

    def resolve(self, module: str, name: str, expected: ExternType) -> Resolved | None:
        return self._modules.get(module, {}).get(name)


class ChainResolver:
    """Asks each resolver in turn; the first answer wins (even a mistyped one, as in WAVM,
    so a stub never hides a registered extern of the wrong type)."""

    def __init__(self, *resolvers: Resolver):
        self.resolvers = resolvers

    def resolve(self, module: str, name: str, expected: ExternType) -> Resolved | None:
        for resolver in self.resolvers:
            found = resolver.resolve(module, name, expected)
            if found is not None:
                return found
        return None


def uses_v128(ty: ExternType) -> bool:
    """Whether wasmtime-py must never see ``ty``: a function or global involving ``v128``."""
    if isinstance(ty, FuncType):
        return "v128" in ty.params or "v128" in ty.results
    return isinstance(ty, GlobalType) and ty.content == "v128"


class StubResolver:
    """Answers any import with a stub of exactly the expected type (WAVM's ``StubResolver``):
    functions trap when called (``mode="trap"``) or return zeros (``mode="zero"``), memories
    and tables are fresh and empty, globals hold zero or null.

    Imports the host cannot build stay unresolved, so the link report names them: ``v128``
    functions and globals (wasmtime-py aborts the process on such signatures), shared
    memories and exception tags. Put it last in a ``ChainResolver``.
    """

    def __init__(self, store: wasmtime.Store, mode: str = "trap"):
        if mode not in ("trap", "zero"):
            raise ValueError(f"unknown stub mode {mode!r}; expected 'trap' or 'zero'")
        self.store = store
        self.mode = mode

    def resolve(self, module: str, name: str, expected: ExternType) -> Resolved | None:
        if (uses_v128(expected) or isinstance(expected, TagType)
                or (isinstance(expected, MemoryType) and expected.shared)):
            return None
        stub = IntrinsicModule(module)
        if isinstance(expected, FuncType):
            stub.define_function(name, expected, self._function(module, name, expected))
        elif isinstance(expected, GlobalType):
            zero = {"i32": 0, "i64": 0, "f32": 0.0, "f64": 0.0}.get(expected.content)
            stub.define_global(name, expected, zero)
        elif isinstance(expected, MemoryType):
            stub.define_memory(name, expected)
        else:
            stub.define_table(name, expected)
        return Resolved(stub.instantiate(self.store)[name], expected)

    def _function(self, module: str, name: str, ty: FuncType) -> Any:
        zeros = tuple(0.0 if t[0] == "f" else None if t.endswith("ref") else 0
                      for t in ty.results)

        def stub(_: Any, *args: Any) -> Any:
            if self.mode == "trap":
                raise Trap("unreachable", f"called the stub for unresolved import "
                                          f"{module}.{name} {ty}")
            return zeros[0] if len(zeros) == 1 else (zeros or None)

        return stub


def current_type(store: wasmtime.Store, found: Resolved) -> ExternType:
    """The type ``found`` has now: a memory's or table's minimum is its current size, which
    grows at run time (the spec matches imports against this, not the declaration)."""
    ty, extern = found.type, found.extern
    if isinstance(ty, MemoryType) and isinstance(extern, wasmtime.Memory):
        return MemoryType(Limits(extern.size(store), ty.limits.max), ty.shared)
    if isinstance(ty, TableType) and isinstance(extern, wasmtime.Table):
        return TableType(ty.element, Limits(extern.size(store), ty.limits.max))
    return ty


@dataclass
class LinkResult:
    """Externs in import order when every import resolved; otherwise every problem."""

    externs: list[Any] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_if_failed(self) -> None:
        """Raises:
            LinkError: listing every problem, when there is any.
        """
        if self.problems:
            raise LinkError(self.problems)


def _problem(imp: Import, actual: ExternType | None) -> str:
    where = f"{imp.module}.{imp.name}"
    if actual is None:
        hint = "; the host cannot provide v128 externs" if uses_v128(imp.type) else ""
        return f"{where}: expected {imp.type}, got nothing (unknown import{hint})"
    return f"{where}: expected {imp.type}, got {actual}"


def link(info: ModuleInfo, resolver: Resolver, store: wasmtime.Store | None = None
         ) -> LinkResult:
    """Resolve every import of ``info``; never stops at the first problem.

    Args:
        store: the store the externs live in; with it, memories and tables are matched by
            their current size rather than their declared minimum.
    """
    result = LinkResult()
    for imp in info.imports:
        found = resolver.resolve(imp.module, imp.name, imp.type)
        if found is None:
            result.problems.append(_problem(imp, None))
            continue
        actual = found.type if store is None else current_type(store, found)
        if is_subtype(actual, imp.type):
            result.externs.append(found.extern)
        else:
            result.problems.append(_problem(imp, actual))
    return result


def instance_exports(store: wasmtime.Store, instance: wasmtime.Instance,
                     info: ModuleInfo) -> dict[str, Resolved]:
    """The exports of an instantiated module with the types read from its binary."""
    exports = instance.exports(store)
    return {e.name: Resolved(exports[e.name], e.type) for e in info.exports}
