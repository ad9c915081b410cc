"""Intrinsic modules after WAVM: host functions, globals, memories and tables declared once in
Python.

    env = IntrinsicModule("env")

    @env.function
    def add(ctx: HostContext, a: i32, b: i32) -> i32:
        return a + b

``instantiate(store)`` turns the declaration into an ``IntrinsicInstance``: a mapping from
export name to a wasmtime extern, with its declared type, that a linker can register
under the module's name. Nothing reaches the host unless a declaration exports it.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import wasmtime

from wasm_kernels.wasm import ExternType, FuncType, GlobalType, MemoryType, TableType


class i32(int):
    """Annotation: a wasm ``i32`` parameter or result (passed as a Python ``int``)."""


class i64(int):
    """Annotation: a wasm ``i64``."""


class f32(float):
    """Annotation: a wasm ``f32`` (passed as a Python ``float``)."""


class f64(float):
    """Annotation: a wasm ``f64``."""


_ANNOTATIONS = {i32: "i32", i64: "i64", f32: "f32", f64: "f64"}
# NOTE: no v128: wasmtime-py aborts the process when it reads or calls such a signature.
_WASMTIME_VALTYPES = {"i32": wasmtime.ValType.i32, "i64": wasmtime.ValType.i64,
                      "f32": wasmtime.ValType.f32, "f64": wasmtime.ValType.f64,
                      "funcref": wasmtime.ValType.funcref, "externref": wasmtime.ValType.externref}
_VALS: dict[str, Callable[[Any], wasmtime.Val]] = {
    "i32": wasmtime.Val.i32, "i64": wasmtime.Val.i64, "f32": wasmtime.Val.f32,
    "f64": wasmtime.Val.f64, "funcref": wasmtime.Val.funcref, "externref": wasmtime.Val.externref}


def _valtype(name: str, what: str) -> wasmtime.ValType:
    if name not in _WASMTIME_VALTYPES:
        raise ValueError(f"{what} cannot use value type {name!r}; "
                         f"supported: {sorted(_WASMTIME_VALTYPES)}")
    return _WASMTIME_VALTYPES[name]()


def to_wasmtime(ty: FuncType) -> wasmtime.FuncType:
    """Our ``FuncType`` as wasmtime's.

    Raises:
        ValueError: the signature uses ``v128`` (wasmtime-py aborts the process on it).
    """
    return wasmtime.FuncType([_valtype(t, "host functions") for t in ty.params],
                             [_valtype(t, "host functions") for t in ty.results])


def _limits(ty: MemoryType | TableType) -> wasmtime.Limits:
    return wasmtime.Limits(ty.limits.min, ty.limits.max)


class NoMemory(LookupError):
    """A host function needs the caller's memory, but it exports none and none was bound."""


class HostContext:
    """What a host function sees of its caller: the instance's state and linear memory."""

    __slots__ = ("_memory", "caller", "state")

    def __init__(self, caller: wasmtime.Caller, state: Any, memory: wasmtime.Memory | None):
        self.caller = caller
        self.state = state
        self._memory = memory

    @property
    def memory(self) -> np.ndarray:
        """A zero-copy ``uint8`` view of the caller's memory (its ``memory`` export, else the
        memory the instance was bound to). Valid only during this call.

        Raises:
            NoMemory: the caller exports no memory and none was bound.
        """
        exported = self.caller.get("memory")
        memory = exported if isinstance(exported, wasmtime.Memory) else self._memory
        if memory is None:
            raise NoMemory("the calling module exports no 'memory'")
        size = memory.data_len(self.caller)
        if size == 0:
            return np.zeros(0, np.uint8)
        return np.ctypeslib.as_array(memory.data_ptr(self.caller), shape=(size,))


@dataclass(frozen=True)
class _Declaration:
    name: str
    type: ExternType
    value: Any  # a Python callable for functions, the initial value for globals
    origin: str  # the module that declared it, named when a merge finds a duplicate


class IntrinsicModule:
    """A named, declared set of host functions, globals, memories and tables."""

    def __init__(self, name: str):
        self.name = name
        self._declarations: dict[str, _Declaration] = {}

    def _declare(self, declaration: _Declaration) -> None:
        previous = self._declarations.get(declaration.name)
        if previous is None:
            self._declarations[declaration.name] = declaration
        elif declaration.origin == self.name:
            raise ValueError(f"intrinsic module {self.name!r} already declares "
                             f"{declaration.name!r}; every export name must be unique")
        else:
            raise ValueError(f"cannot merge {declaration.origin!r} into {self.name!r}: "
                             f"{declaration.name!r} is already declared by {previous.origin!r}")

    def function(self, fn: Callable[..., Any] | None = None, *,
                 name: str | None = None) -> Any:
        """Decorator: declare ``fn(ctx, *params)`` with its wasm signature read from its
        annotations (``i32``, ``i64``, ``f32``, ``f64``; ``-> None`` for no result).

        Raises:
            TypeError: a parameter or the result is not annotated with a wasm value type.
        """
        def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
            hints = typing.get_type_hints(fn)
            params = list(inspect.signature(fn).parameters)[1:]
            for param in params:
                if hints.get(param) not in _ANNOTATIONS:
                    raise TypeError(f"{fn.__name__}: parameter {param!r} needs a wasm type "
                                    f"annotation (i32, i64, f32 or f64), got "
                                    f"{hints.get(param, 'none')!r}")
            types = tuple(_ANNOTATIONS[hints[p]] for p in params)
            result = hints.get("return", type(None))
            if result is not type(None) and result not in _ANNOTATIONS:
                raise TypeError(f"{fn.__name__}: result must be annotated i32, i64, f32, f64 "
                                f"or None, got {result!r}")
            results = () if result is type(None) else (_ANNOTATIONS[result],)
            self.define_function(name or fn.__name__, FuncType(types, results), fn)
            return fn

        return declare(fn) if fn is not None else declare

    def define_function(self, name: str, ty: FuncType, fn: Callable[..., Any]) -> None:
        """Declare host function ``name`` of type ``ty``; ``fn`` gets a ``HostContext`` first."""
        to_wasmtime(ty)
        if not callable(fn):
            raise TypeError(f"host function {name!r} must be callable, got {fn!r}")
        self._declare(_Declaration(name, ty, fn, self.name))

    def define_global(self, name: str, ty: GlobalType, value: Any) -> None:
        """Declare global ``name`` of type ``ty`` holding ``value`` (an ``int`` for ``i32`` and
        ``i64``, a ``float`` for ``f32`` and ``f64``, ``None`` or a reference for refs).

        Raises:
            ValueError: ``ty`` is ``v128``, which the host cannot represent.
            TypeError: ``value`` does not fit the global's value type.
        """
        _valtype(ty.content, "host globals")
        numeric: dict[str, type | tuple[type, ...]] = {"i32": int, "i64": int,
                                                       "f32": (int, float), "f64": (int, float)}
        expected = numeric.get(ty.content, object)
        if not isinstance(value, expected) or isinstance(value, bool):
            raise TypeError(f"global {name!r} of type {ty.content} needs "
                            f"{'a float' if ty.content[0] == 'f' else 'an int'}, got {value!r}")
        self._declare(_Declaration(name, ty, value, self.name))

    def define_memory(self, name: str, ty: MemoryType) -> None:
        """Declare memory ``name`` of type ``ty``; each instantiation creates a fresh one.

        Raises:
            ValueError: ``ty`` is shared (wasmtime-py cannot define a ``SharedMemory`` import).
        """
        if ty.shared:
            raise ValueError(f"memory {name!r}: shared memories cannot be declared as "
                             "intrinsics; create the SharedMemory in the host instead")
        self._declare(_Declaration(name, ty, None, self.name))

    def define_table(self, name: str, ty: TableType) -> None:
        """Declare table ``name`` of type ``ty``, filled with null references.

        Raises:
            ValueError: the element type is not ``funcref`` or ``externref``.
        """
        if ty.element not in ("funcref", "externref"):
            raise ValueError(f"table {name!r}: element type must be funcref or externref, "
                             f"got {ty.element!r}")
        self._declare(_Declaration(name, ty, None, self.name))

    @property
    def types(self) -> dict[str, ExternType]:
        return {name: d.type for name, d in self._declarations.items()}

    @classmethod
    def merged(cls, name: str, *modules: IntrinsicModule) -> IntrinsicModule:
        """One module exporting the declarations of all ``modules`` (WAVM merges WASI's parts).

        Raises:
            ValueError: two modules declare the same name.
        """
        out = cls(name)
        for module in modules:
            for declaration in module._declarations.values():
                out._declare(declaration)
        return out

    def instantiate(self, store: wasmtime.Store, state: Any = None,
                    memory: wasmtime.Memory | None = None,
                    only: Iterable[str] | None = None) -> IntrinsicInstance:
        """Create the externs in ``store``; host functions see ``state`` and ``memory``.
        ``only`` restricts the instance to those names (e.g. what one module imports), which
        saves creating the rest; unknown names are simply absent, for the linker to report."""
        wanted = None if only is None else set(only)
        externs: dict[str, Any] = {}
        for decl in self._declarations.values():
            if wanted is not None and decl.name not in wanted:
                continue
            if isinstance(decl.type, FuncType):
                externs[decl.name] = wasmtime.Func(store, to_wasmtime(decl.type),
                                                   _thunk(decl.value, state, memory),
                                                   access_caller=True)
            elif isinstance(decl.type, GlobalType):
                content = decl.type.content
                externs[decl.name] = wasmtime.Global(
                    store, wasmtime.GlobalType(_valtype(content, "globals"), decl.type.mutable),
                    _VALS[content](decl.value))
            elif isinstance(decl.type, TableType):
                externs[decl.name] = wasmtime.Table(store, wasmtime.TableType(
                    _valtype(decl.type.element, "tables"), _limits(decl.type)), None)
            else:
                assert isinstance(decl.type, MemoryType)  # the define_* methods declare no tags
                externs[decl.name] = wasmtime.Memory(store,
                                                     wasmtime.MemoryType(_limits(decl.type)))
        return IntrinsicInstance(self.name, externs, self.types)


def _thunk(fn: Callable[..., Any], state: Any,
           memory: wasmtime.Memory | None) -> Callable[..., Any]:
    def call(caller: wasmtime.Caller, *args: Any) -> Any:
        return fn(HostContext(caller, state, memory), *args)

    return call


class IntrinsicInstance(Mapping[str, Any]):
    """An instantiated intrinsic module: export name -> wasmtime extern, plus declared types."""

    def __init__(self, name: str, externs: dict[str, Any], types: dict[str, ExternType]):
        self.name = name
        self._externs = externs
        self.types = types

    def __getitem__(self, key: str) -> Any:
        return self._externs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._externs)

    def __len__(self) -> int:
        return len(self._externs)
