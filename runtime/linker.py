"""A WAVM-style linker: resolvers answer imports by name and expected type; every problem is
collected into one ``LinkResult`` before anything is instantiated.

Types are compared as our own ``ExternType`` values read from the binaries, never through
wasmtime-py (which can abort the process on ``v128`` signatures).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

import wasmtime

from wasm_kernels.wasm import ExternType, FuncType, Import, ModuleInfo, is_subtype
from wasi_intrinsics import IntrinsicInstance, to_wasmtime

from .errors import LinkError


@dataclass(frozen=True)
class Resolved:
    """An extern that answers an import, with the type it actually has."""

    extern: Any
    type: ExternType


Exports = Mapping[str, Resolved]


class Resolver(Protocol):
    """Answers one import: the extern for ``module.name``, or ``None`` when it has none."""

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
        if isinstance(exports, IntrinsicInstance):
            exports = {n: Resolved(exports[n], exports.types[n]) for n in exports}
        self._modules[module] = exports

    def __contains__(self, module: str) -> bool:
        return module in self._modules

    def resolve(self, module: str, name: str, expected: ExternType) -> Resolved | None:
        return self._modules.get(module, {}).get(name)


class ChainResolver:
    """Asks each resolver in turn; the first answer wins."""

    def __init__(self, *resolvers: Resolver):
        self.resolvers = resolvers

    def resolve(self, module: str, name: str, expected: ExternType) -> Resolved | None:
        for resolver in self.resolvers:
            found = resolver.resolve(module, name, expected)
            if found is not None:
                return found
        return None


class StubResolver:
    """Answers any *function* import with a stub that traps when called (``mode="trap"``) or
    returns zeros (``mode="zero"``); other extern kinds stay unresolved."""

    def __init__(self, store: wasmtime.Store, mode: str = "trap"):
        if mode not in ("trap", "zero"):
            raise ValueError(f"unknown stub mode {mode!r}; expected 'trap' or 'zero'")
        self.store = store
        self.mode = mode

    def resolve(self, module: str, name: str, expected: ExternType) -> Resolved | None:
        if not isinstance(expected, FuncType):
            return None
        results = expected.results

        def stub(*_: Any) -> Any:
            if self.mode == "trap":
                raise wasmtime.Trap(f"called unresolved import {module}.{name}")
            zeros = [0.0 if t.startswith("f") else 0 for t in results]
            return zeros[0] if len(zeros) == 1 else (tuple(zeros) or None)

        return Resolved(wasmtime.Func(self.store, to_wasmtime(expected), stub), expected)


@dataclass
class LinkResult:
    """Externs in import order when every import resolved; otherwise every problem."""

    externs: list[Any] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_if_failed(self) -> None:
        if self.problems:
            raise LinkError(self.problems)


def _problem(imp: Import, found: Resolved | None) -> str:
    where = f"{imp.module}.{imp.name}"
    if found is None:
        return f"{where}: expected {imp.type}, got nothing (unknown import)"
    return f"{where}: expected {imp.type}, got {found.type}"


def link(info: ModuleInfo, resolver: Resolver) -> LinkResult:
    """Resolve every import of ``info``; never stops at the first problem."""
    result = LinkResult()
    for imp in info.imports:
        found = resolver.resolve(imp.module, imp.name, imp.type)
        if found is None or not is_subtype(found.type, imp.type):
            result.problems.append(_problem(imp, found))
        else:
            result.externs.append(found.extern)
    return result


def instance_exports(store: wasmtime.Store, instance: wasmtime.Instance,
                     info: ModuleInfo) -> dict[str, Resolved]:
    """The exports of an instantiated module with the types read from its binary."""
    exports = instance.exports(store)
    return {e.name: Resolved(exports[e.name], e.type) for e in info.exports}
