"""One module per store for threads: a model merged with the kernels it imports.

wasmtime (50) defines a shared memory anew in a store for each instance importing it, and
when an out-of-bounds access faults in a guard page, the store finds the address in
several instances' memories and aborts the process (``assertion failed:
fault.is_none()``). A threaded session therefore gives each store exactly one module that
touches the linear memory: the caller's store holds this merge of the model with the
bodies of its kernels and the dispatch functions (``wasm_kernels.parallel``), a worker's
store its worker module. Guard pages stay on, so an out-of-bounds access in any thread is
a clean trap and the kernels keep their speed.

The merge keeps the model's own bytes and indices: a model from ``modelc`` imports its
kernels after every other function, so the kernels' bodies take the places their imports
held in the function index space, and nothing in the model's code, exports, elements or
names moves. The dispatch functions follow the model's functions. The model's
``env.memory`` import becomes a memory the merged module defines (unshared, backed by the
bytes every store of the team shares: ``runtime.host_memory``); the control memory is
defined after it (memory 1, shared); both are exported (``parallel.MEMORY_EXPORTS``), the
control memory for the workers to import. A model laid out
otherwise (hostile or hand-made) is refused with ``MergeError`` before anything is compiled.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import wasmtime

from wasm_kernels import MAX_PAGES, abi, parallel
from wasm_kernels.wasm import Code, FuncType, Limits, ModuleInfo, WasmFormatError, read_module
from wasm_kernels.wasm.builder import _functype, _limits, name_section
from wasm_kernels.wasm.decode import _Reader
from wasm_kernels.wasm.encode import MAGIC_AND_VERSION, name, uleb, vector

from .compartment import engine
from .threads import FEATURES

_TYPE, _IMPORT, _FUNCTION, _MEMORY, _EXPORT, _CODE = 1, 2, 3, 5, 7, 10
_ORDER = (1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11)
"""Section ids in the order the binary format requires."""


class MergeError(ValueError):
    """The model cannot be merged with its kernels (its layout is not one ``modelc``
    emits); the message says what was found."""


Sections = list[tuple[int, bytes]]


def sections(wasm: bytes) -> Sections:
    """``wasm``'s sections in order, as (id, payload).

    Raises:
        WasmFormatError: not a WebAssembly 1.0 binary, or a section overruns it.
    """
    if wasm[:8] != MAGIC_AND_VERSION:
        raise WasmFormatError("not a WebAssembly 1.0 module (bad magic or version)")
    reader = _Reader(wasm)
    reader.pos = 8
    out: Sections = []
    while reader.pos < len(wasm):
        sid = reader.byte()
        if sid not in _ORDER and sid != 0:
            raise reader.fail(f"unknown section id {sid}")
        if sid and any(sid == seen for seen, _ in out):
            raise reader.fail(f"a second section {sid}")
        out.append((sid, reader.bytes(reader.u32())))
    return out


def _items(payload: bytes) -> tuple[int, _Reader]:
    reader = _Reader(payload)
    return reader.u32(), reader


def _bodies(payload: bytes) -> list[bytes]:
    """A code section's bodies, each with its size prefix."""
    count, reader = _items(payload)
    out = []
    for _ in range(count):
        head = reader.pos
        reader.bytes(reader.u32())
        out.append(reader.data[head:reader.pos])
    return out


@dataclass
class _Import:
    module: str
    field_name: str
    kind: int
    raw: bytes
    type_index: int = -1
    limits: Limits | None = None


def _imports(payload: bytes) -> list[_Import]:
    count, reader = _items(payload)
    out = []
    for _ in range(count):
        head = reader.pos
        module, field_name, kind = reader.name(), reader.name(), reader.byte()
        index = -1
        limits = None
        if kind == 0:
            index = reader.u32()
        elif kind == 1:
            reader.byte()
            reader.limits()
        elif kind == 2:
            limits, _ = reader.limits()
        elif kind == 3:
            reader.valtype()
            reader.byte()
        elif kind == 4:
            reader.byte()
            reader.u32()
        else:
            raise reader.fail(f"unknown import kind {kind}")
        out.append(_Import(module, field_name, kind, reader.data[head:reader.pos], index,
                           limits))
    return out


@dataclass
class _Space:
    """The merged module's function index space: the model's, then the functions defined
    here (what ``wasm_kernels.parallel.Bodies`` asks for)."""

    funcs: list[tuple[str | None, FuncType]]
    defined: list[tuple[FuncType, bytes]] = field(default_factory=list)
    exports: dict[str, int] = field(default_factory=dict)

    def code(self, ty: FuncType, names: Sequence[str] = ()) -> Code:
        return Code(ty.params, ty.results, names=names, funcs=self.funcs)

    def add_body(self, ty: FuncType, body: bytes, name: str | None) -> int:
        self.funcs.append((name, ty))
        self.defined.append((ty, body))
        return len(self.funcs) - 1

    def add_function(self, ty: FuncType, code: Code, export: str | None = None,
                     name: str | None = None) -> int:
        index = self.add_body(ty, code.encode(), name or export)
        if export is not None:
            self.exports[export] = index
        return index


@dataclass(frozen=True)
class _Kernels:
    """The one-thread bodies of a kernel module (``wasm_kernels.build``), by name."""

    bodies: dict[str, tuple[FuncType, bytes]]

    @classmethod
    def read(cls, wasm: bytes) -> _Kernels:
        parts = dict(sections(wasm))
        count, reader = _items(parts.get(_TYPE, b"\0"))
        types = [reader.functype() for _ in range(count)]
        count, reader = _items(parts.get(_FUNCTION, b"\0"))
        signatures = [types[reader.u32()] for _ in range(count)]
        imported = sum(i.kind == 0 for i in _imports(parts.get(_IMPORT, b"\0")))
        bodies = _bodies(parts.get(_CODE, b"\0"))
        count, reader = _items(parts.get(_EXPORT, b"\0"))
        out = {}
        for _ in range(count):
            export, kind, index = reader.name(), reader.byte(), reader.u32() - imported
            if kind == 0:
                out[export] = (signatures[index], bodies[index])
        return cls(out)


def imported_kernels(info: ModuleInfo) -> frozenset[str]:
    """The ABI kernels a model imports; names the ABI lacks are left for the linker to
    report."""
    return frozenset(i.name for i in info.imports
                     if i.module == abi.MODULE and i.name in abi.BY_NAME)


def threaded(wasm: bytes, isa: str, kernels: Callable[[frozenset[str]], bytes]
             ) -> tuple[bytes, frozenset[str]] | None:
    """``wasm`` merged with its kernels of ``isa`` (from ``kernels(names)``, a kernel module
    importing a shared memory; see ``merge``), and the kernels it imports; ``None`` when it
    does not merge (the session then runs on one thread, where compiling and linking report
    what is wrong with a malformed module): a well-formed one that does not merge is worth a
    ``RuntimeWarning``."""
    try:
        # NOTE: validated alone first: once merged, a function or memory index past the
        # model's own would name the kernels, the dispatch or the control memory.
        wasmtime.Module.validate(engine(features=FEATURES), wasm)
        names = imported_kernels(read_module(wasm))
        split = frozenset(names & parallel.splits(isa).keys())
        return merge(wasm, kernels(names), isa, split), names
    except MergeError as err:
        warnings.warn(f"the model runs on one thread: {err}", RuntimeWarning, stacklevel=4)
    except (WasmFormatError, wasmtime.WasmtimeError):
        pass
    return None


def merge(model: bytes, kernels: bytes, isa: str, split: frozenset[str]) -> bytes:
    """``model`` with its kernel imports replaced by the bodies in ``kernels`` (a kernel
    module of ``isa`` importing a shared memory), and, when some of them split (``split``,
    see ``wasm_kernels.parallel.splits``), by stand-ins that share their work with the
    workers, with the dispatch functions (``parallel.EXPORTS``) and the control memory; its
    ``env.memory`` import defined instead (unshared, up to ``MAX_PAGES``) and exported.

    Raises:
        MergeError: the model's layout is not one ``modelc`` emits: it defines a memory,
            imports no memory or another than ``env.memory``, imports a function after a kernel,
            imports a kernel that ``kernels`` lacks or with another signature, or exports a
            name of ``parallel.EXPORTS`` or ``parallel.MEMORY_EXPORTS``.
        WasmFormatError: the model is malformed.
    """
    parts = sections(model)
    present = dict(parts)
    if _MEMORY in present:
        raise MergeError("the model defines a memory; a threaded model imports 'env.memory'")
    count, reader = _items(present.get(_TYPE, b"\0"))
    types = [reader.functype() for _ in range(count)]
    imports = _imports(present.get(_IMPORT, b"\0"))
    funcs, slots = _function_imports(imports, types, _Kernels.read(kernels))
    count, reader = _items(present.get(_FUNCTION, b"\0"))
    own = [reader.u32() for _ in range(count)]
    if any(index >= len(types) for index in own):
        raise WasmFormatError("a function uses an unknown type")
    space = _Space(funcs + [(name, ty) for name, ty, _ in slots]
                   + [(None, types[index]) for index in own])
    slot_bodies = _fill(space, isa, split, slots)
    memory = [i.limits for i in imports if i.kind == 2]
    if len(memory) != 1 or memory[0] is None:
        raise MergeError(f"the model imports {len(memory)} memories; a threaded model "
                         "imports one, 'env.memory'")
    memories = [_limits(Limits(memory[0].min, MAX_PAGES))]
    ours = {name: (0, index) for name, index in space.exports.items()}
    ours[parallel.MEMORY_EXPORTS["memory"]] = (2, 0)
    if split:
        memories.append(_limits(parallel.CONTROL_TYPE.limits, shared=True))
        ours[parallel.MEMORY_EXPORTS["control"]] = (2, 1)
    exports = _exports(present.get(_EXPORT, b"\0"), ours)
    new_types = list(dict.fromkeys(ty for ty, _ in space.defined))
    type_of = {ty: len(types) + i for i, ty in enumerate(new_types)}
    kept = [i.raw for i in imports if i.kind != 2 and (i.kind != 0 or i.module != abi.MODULE)]
    slot_types = [uleb(types.index(ty)) for _, ty, _ in slots]
    rebuilt = {
        _TYPE: vector([_functype(t) for t in types + new_types]),
        _IMPORT: vector(kept),
        _MEMORY: vector(memories),
        _FUNCTION: vector(slot_types + [uleb(i) for i in own]
                          + [uleb(type_of[ty]) for ty, _ in space.defined]),
        _EXPORT: exports,
        _CODE: vector(slot_bodies + _bodies(present.get(_CODE, b"\0"))
                      + [body for _, body in space.defined]),
    }
    return _assemble(parts, rebuilt, _names(parts, space))


def _function_imports(imports: list[_Import], types: list[FuncType], kernels: _Kernels
                      ) -> tuple[list[tuple[str | None, FuncType]],
                                 list[tuple[str, FuncType, bytes]]]:
    """The model's function imports that stay imports, and its kernel imports in order
    (name, signature, one-thread body): the kernels must come after every other function.

    Raises:
        MergeError: see ``merge``.
    """
    funcs: list[tuple[str | None, FuncType]] = []
    slots: list[tuple[str, FuncType, bytes]] = []
    for entry in imports:
        where = f"{entry.module}.{entry.field_name}"
        if entry.kind == 2 and (entry.module, entry.field_name) != ("env", "memory"):
            raise MergeError(f"the model imports the memory {where}; only 'env.memory' merges")
        if entry.kind != 0:
            continue
        if entry.type_index >= len(types):
            raise WasmFormatError(f"import {where} uses unknown type {entry.type_index}")
        ty = types[entry.type_index]
        if entry.module != abi.MODULE:
            if slots:
                raise MergeError(f"the model imports {where} after its kernels")
            funcs.append((entry.field_name, ty))
            continue
        found = kernels.bodies.get(entry.field_name)
        if found is None or found[0] != ty:
            raise MergeError(f"the model imports kernel {entry.field_name!r} as {ty}, "
                             f"which {abi.MODULE} does not provide")
        slots.append((entry.field_name, ty, found[1]))
    return funcs, slots


def _fill(space: _Space, isa: str, split: frozenset[str],
          slots: list[tuple[str, FuncType, bytes]]) -> list[bytes]:
    """Define the one-thread bodies of the kernels that split and the dispatch functions in
    ``space``; the bodies of the slots: a stand-in for a kernel that splits, else the
    kernel's own body."""
    names = sorted({n for n, _, _ in slots} & split)
    if not names:
        return [body for _, _, body in slots]
    bodies = {n: (ty, body) for n, ty, body in slots}
    serial = [space.add_body(*bodies[n], name=n) for n in names]
    helpers = parallel.add_helpers(space, isa, names, serial)
    return [parallel.standin(space, isa, names, n, serial[names.index(n)], helpers).encode()
            if n in split else body for n, _, body in slots]


def _exports(payload: bytes, ours: dict[str, tuple[int, int]]) -> bytes:
    """The model's exports and ``ours`` (name: (kind, index)).

    Raises:
        MergeError: the model exports one of ``parallel.EXPORTS``.
    """
    count, reader = _items(payload)
    rest = reader.data[reader.pos:]
    for _ in range(count):
        export = reader.name()
        reader.byte()
        reader.u32()
        if export in {*parallel.EXPORTS.values(), *parallel.MEMORY_EXPORTS.values()}:
            raise MergeError(f"the model exports {export!r}, a name the runtime's threads use")
    return uleb(count + len(ours)) + rest + b"".join(
        name(n) + bytes([kind]) + uleb(i) for n, (kind, i) in ours.items())


def _names(parts: Sections, space: _Space) -> bytes:
    """The name section: the model's module and function names (a kernel's import name now
    names its body), with the functions defined here added. A model's name section that
    does not parse is dropped (names only label traps)."""
    module: str | None = None
    functions: dict[int, str] = {}
    payload = next((p for sid, p in parts if sid == 0 and _custom_name(p) == "name"), None)
    if payload is not None:
        try:
            module, functions = _read_names(payload)
        except WasmFormatError:
            module, functions = None, {}
    for index, (fn, _) in enumerate(space.funcs):
        if fn is not None:
            functions.setdefault(index, fn)
    return name_section(module, functions, {})


def _custom_name(payload: bytes) -> str | None:
    try:
        return _Reader(payload).name()
    except WasmFormatError:
        return None


def _read_names(payload: bytes) -> tuple[str | None, dict[int, str]]:
    reader = _Reader(payload)
    reader.name()
    module, functions = None, {}
    while reader.pos < len(payload):
        sid = reader.byte()
        sub = _Reader(reader.bytes(reader.u32()))
        if sid == 0:
            module = sub.name()
        elif sid == 1:
            for _ in range(sub.u32()):
                index = sub.u32()
                functions[index] = sub.name()
    return module, functions


def _assemble(parts: Sections, rebuilt: dict[int, bytes], names: bytes) -> bytes:
    """The model's custom sections (but its name section), then its other sections in the
    binary format's order with ``rebuilt`` ones replaced or added, then ``names``."""
    out = bytearray(MAGIC_AND_VERSION)

    def section(sid: int, payload: bytes) -> None:
        out.extend(bytes([sid]) + uleb(len(payload)) + payload)

    for sid, payload in parts:
        if sid == 0 and _custom_name(payload) != "name":
            section(sid, payload)
    known = {sid: payload for sid, payload in parts if sid != 0} | rebuilt
    for sid in _ORDER:
        if sid in known:
            section(sid, known[sid])
    section(0, name("name") + names)
    return bytes(out)
