"""WebAssembly extern types as plain values, shared by the encoder, the reader and the linker.

These are deliberately independent of wasmtime: wasmtime-py can abort the process when it
reads a signature containing ``v128``, so the linker compares these instead.
"""

from __future__ import annotations

from dataclasses import dataclass

VALUE_TYPES = {"i32": 0x7F, "i64": 0x7E, "f32": 0x7D, "f64": 0x7C, "v128": 0x7B,
               "funcref": 0x70, "externref": 0x6F}
VALUE_TYPE_NAMES = {code: name for name, code in VALUE_TYPES.items()}


@dataclass(frozen=True)
class FuncType:
    """A function signature: parameter and result value types by name (``"i32"``...)."""

    params: tuple[str, ...]
    results: tuple[str, ...]

    def __str__(self) -> str:
        results = self.results[0] if len(self.results) == 1 else f"({', '.join(self.results)})"
        return f"({', '.join(self.params)}) -> {results}"


@dataclass(frozen=True)
class Limits:
    """Minimum and optional maximum size (pages for memories, elements for tables)."""

    min: int
    max: int | None = None

    def fits_in(self, required: Limits) -> bool:
        """Whether limits that *are* self satisfy an import that *requires* ``required``."""
        if self.min < required.min:
            return False
        if required.max is None:
            return True
        return self.max is not None and self.max <= required.max

    def __str__(self) -> str:
        return f"{self.min}" if self.max is None else f"{self.min}..{self.max}"


@dataclass(frozen=True)
class MemoryType:
    limits: Limits
    shared: bool = False

    def __str__(self) -> str:
        return f"memory {self.limits}{' shared' if self.shared else ''}"


@dataclass(frozen=True)
class TableType:
    element: str
    limits: Limits

    def __str__(self) -> str:
        return f"table {self.limits} {self.element}"


@dataclass(frozen=True)
class GlobalType:
    content: str
    mutable: bool

    def __str__(self) -> str:
        return f"global {'mut ' if self.mutable else ''}{self.content}"


@dataclass(frozen=True)
class TagType:
    """An exception tag: the values its exceptions carry (a tag's function type has no
    results)."""

    params: tuple[str, ...]

    def __str__(self) -> str:
        return f"tag ({', '.join(self.params)})"


ExternType = FuncType | MemoryType | TableType | GlobalType | TagType


def is_subtype(actual: ExternType, expected: ExternType) -> bool:
    """Import matching as the spec defines it: may ``actual`` satisfy an import of ``expected``?"""
    if isinstance(actual, FuncType) and isinstance(expected, FuncType):
        return actual == expected
    if isinstance(actual, MemoryType) and isinstance(expected, MemoryType):
        return actual.shared == expected.shared and actual.limits.fits_in(expected.limits)
    if isinstance(actual, TableType) and isinstance(expected, TableType):
        return actual.element == expected.element and actual.limits.fits_in(expected.limits)
    if isinstance(actual, GlobalType) and isinstance(expected, GlobalType):
        return actual == expected
    if isinstance(actual, TagType) and isinstance(expected, TagType):
        return actual == expected
    return False
