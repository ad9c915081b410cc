"""Model instances and the pool a ``Session`` lends them from.

Each ``ModelInstance`` is its own compartment (store, limits, linear memory, WASI, kernels)
over compiled modules that all instances of a model share, so instances never see each
other's memory and one thread at a time runs each. wasm calls release the GIL, so instances
on different threads run in parallel. ``InstancePool`` creates instances lazily, up to a
size, and drops the ones that trapped: their memory may be half-written.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import wasmtime

import wasm_kernels
from wasi_intrinsics.kernel_limits import KernelState
from wasi_intrinsics.kernels import provider as host_kernels
from wasi_intrinsics.wasi import MODULE as WASI_MODULE
from wasi_intrinsics.wasi import CappedBuffer, WasiConfig, WasiState, preview1
from wasm_kernels.wasm import Limits, MemoryType, ModuleInfo

from . import host_memory
from . import metadata as md
from . import threads as intra
from .arena import Addresses
from .compartment import Compartment
from .data_segments import Segments
from .errors import Trap, one_line
from .linker import RegistryResolver, Resolved, instance_exports
from .raw_call import I32Call
from .run_plan import MemoryViews

PAGE = 65536
_WASI = preview1()  # NOTE: declarations are immutable; instances are made per compartment.
Compiled = tuple[wasmtime.Module, ModuleInfo]


@dataclass(frozen=True)
class Blueprint:
    """What every instance of one model shares: its metadata, its compiled module, the
    compiled kernel modules (one per opt level they were compiled at; ``None`` for the numpy
    host provider), its memory size, its sidecar weight bytes when the module does not
    carry them, the large data segments compiled out of it (``data_segments``), and the
    threads of each call (``runtime.threads``): with several, the model is merged with its
    kernels (``runtime.merge``; ``kernels`` is empty) and ``worker`` is the workers' module
    (``None`` when no kernel splits)."""

    metadata: md.ModelMetadata
    model: Compiled
    kernels: tuple[Compiled, ...] | None
    pages: int
    sidecar_weights: bytes | None = None
    segments: Segments | None = None
    threads: int = 1
    worker: Compiled | None = None


def defines_memory(info: ModuleInfo) -> bool:
    """Whether a kernel module defines the memory (``wasm_kernels.build``'s ``own_memory``)."""
    return any(e.name == wasm_kernels.MEMORY for e in info.exports)


def link_kernels(compartment: Compartment, compiled: tuple[Compiled, ...] | None, pages: int,
                 registry: RegistryResolver) -> tuple[Any, wasmtime.Memory]:
    """Instantiate kernel modules (``None``: the numpy host provider) in ``compartment`` and
    register their memory of ``pages`` as ``env.memory``: the memory a kernel module defines
    (``wasm_kernels.MEMORY``, grown to ``pages``), else a new one. Returns the kernels'
    exports and the memory.

    Raises:
        LinkError, Trap: as ``Compartment.instantiate``.
        LimitExceeded: ``pages`` is over the memory's share of ``max_memory``.
    """
    store = compartment.store
    owner = next((c for c in compiled or () if defines_memory(c[1])), None)
    exports: dict[str, Resolved] = {}
    if owner is not None:
        exports = instance_exports(store, compartment.instantiate(*owner, registry), owner[1])
        memory = exports.pop(wasm_kernels.MEMORY).extern
        compartment.call(memory.grow, store, pages - memory.size(store))
    else:
        memory = compartment.memory(pages)
    registry.register("env", {"memory": Resolved(memory, MemoryType(Limits(pages)))})
    if compiled is None:
        limits = KernelState(compartment.deadline, compartment.limits.max_memory)
        return host_kernels().instantiate(store, limits, memory=memory), memory
    for entry in compiled:
        if entry is not owner:
            exports |= instance_exports(store, compartment.instantiate(*entry, registry),
                                        entry[1])
    return exports, memory


def _written(blueprint: Blueprint) -> list[tuple[int, int]]:
    """(address, bytes) of the large data the runtime writes into a new instance's memory:
    the data segments compiled out of the module and the sidecar weights."""
    ranges = [(s.address, s.size) for s in blueprint.segments.segments] \
        if blueprint.segments is not None else []
    sidecar = blueprint.metadata.sidecar
    if sidecar is not None and blueprint.sidecar_weights is not None:
        ranges.append((sidecar.offset, len(blueprint.sidecar_weights)))
    return ranges


class ModelInstance:
    """One instance of a model in its own compartment; not for concurrent use."""

    def __init__(self, blueprint: Blueprint, compartment: Compartment):
        """Link and instantiate the model in ``compartment``.

        Raises:
            LinkError: the model imports something the runtime does not provide.
            Trap: a start function trapped or a limit was hit while instantiating.
        """
        self.compartment = compartment
        store = compartment.store
        kernel_infos = [info for _, info in blueprint.kernels or ()]
        owned = blueprint.threads > 1 or any(map(defines_memory, kernel_infos))
        compartment.plan([blueprint.model[1], *kernel_infos], host_memories=0 if owned else 1)
        self._stderr = CappedBuffer()
        registry = RegistryResolver()
        self._team: intra.Team | None = None
        self.memory: wasmtime.Memory | intra.SharedLinearMemory
        if blueprint.threads > 1:
            kernels: Any = {}  # NOTE: merged into the model (runtime.merge)
            self.memory = intra.memory(compartment, blueprint.pages)
        else:
            kernels, self.memory = link_kernels(compartment, blueprint.kernels,
                                                blueprint.pages, registry)
        wasi_imports = [i.name for i in blueprint.model[1].imports if i.module == WASI_MODULE]
        registry.register(WASI_MODULE, _WASI.instantiate(
            store, WasiState(WasiConfig(stderr=self._stderr), compartment.deadline),
            memory=self.memory,  # type: ignore[arg-type]  # NOTE: it has Memory's methods
            only=wasi_imports))
        registry.register(wasm_kernels.abi.MODULE, kernels)
        if isinstance(self.memory, intra.SharedLinearMemory):
            with intra.backed_by(self.memory):
                instance = compartment.instantiate(*blueprint.model, registry)
        else:
            instance = compartment.instantiate(*blueprint.model, registry)
        if isinstance(self.memory, intra.SharedLinearMemory) and blueprint.worker is not None:
            self._team = intra.Team(
                compartment, lambda: Compartment(compartment.limits, compartment.features),
                blueprint.threads, blueprint.worker, self.memory, instance)
        # NOTE: the workers hold the team, not this instance: dropping it joins them.
        self._close = weakref.finalize(self, self._team.close) if self._team else None
        exports = instance.exports(store)
        # NOTE: Session checked the entry's signature (one i32 per dim -> i32) in the binary.
        entry = exports[blueprint.metadata.entry]
        assert isinstance(entry, wasmtime.Func)
        self._entry = I32Call(store, entry, len(blueprint.metadata.dims))
        self.addresses = Addresses(blueprint.metadata, compartment, exports, self.memory_view)
        """Where the inputs and outputs are for given dims (memory grown to them)."""
        if blueprint.segments is not None:
            blueprint.segments.write(self.memory_view())
        sidecar = blueprint.metadata.sidecar
        if sidecar is not None and blueprint.sidecar_weights is not None:
            self.memory.write(store, blueprint.sidecar_weights, sidecar.offset)
        base = ctypes.cast(self.memory.data_ptr(store), ctypes.c_void_p).value or 0
        for address, size in _written(blueprint):
            host_memory.advise_written_huge_pages(base + address, size)
        self.views = MemoryViews(self.memory_size, self.memory_view, self.addresses)

    def memory_size(self) -> int:
        """The linear memory's size in bytes now."""
        return self.memory.data_len(self.compartment.store)

    def memory_view(self) -> np.ndarray:
        """The whole linear memory as a ``uint8`` array. The array keeps this instance's
        compartment (its store) and memory alive, so a view is never left dangling; its
        contents change whenever the instance runs again."""
        store = self.compartment.store
        size = self.memory.data_len(store)
        address = ctypes.cast(self.memory.data_ptr(store), ctypes.c_void_p).value
        buffer = (ctypes.c_uint8 * size).from_address(address or 0)
        # NOTE: pins the store and the memory, not this instance: the views the instance
        # keeps (``views``) would otherwise close a cycle through numpy arrays, which the
        # garbage collector cannot see, and a dropped instance would never be freed.
        buffer.owner = (self.compartment, self.memory)  # type: ignore[attr-defined]
        return np.frombuffer(memoryview(buffer), np.uint8)

    def call(self, args: list[int] | tuple[int, ...]) -> None:
        """Call the entry point with one ``i32`` per dim.

        Raises:
            Trap: the model trapped, hit a limit (``LimitExceeded``), or rejected its inputs
                (code ``"rejected"``, with what it wrote to stderr).
        """
        self._stderr.clear()

        def entry() -> int:
            return self.compartment.call(self._entry, args)

        status = entry() if self._team is None else self._team.run(entry)
        if status != 0:
            message = one_line(self._stderr.text().strip())
            raise Trap("rejected", f"the model rejected its inputs (status {status}): "
                       f"{message or 'no message'}")


    def close(self) -> None:
        """Join this instance's worker threads, if it has any."""
        if self._close is not None:
            self._close()


class InstancePool:
    """Lends instances to threads: an idle one, else a new one while fewer than ``size``
    exist, else waits for one to come back."""

    def __init__(self, create: Callable[[], ModelInstance], size: int, first: ModelInstance):
        if not isinstance(size, int) or isinstance(size, bool):
            raise TypeError(f"instances must be an integer, got {size!r}")
        if size < 1:
            raise ValueError(f"instances must be at least 1, got {size!r}")
        self._create = create
        self.size = size
        self._idle = [first]
        self._live = 1
        self._closed = False
        self._changed = threading.Condition()

    @property
    def live(self) -> int:
        """How many instances exist now (idle or lent)."""
        return self._live

    @property
    def closed(self) -> bool:
        return self._closed

    def acquire(self) -> ModelInstance:
        """An instance for the calling thread's exclusive use; give it back with ``release``.

        Raises:
            RuntimeError: the pool is closed.
            LinkError, Trap: creating a new instance failed.
        """
        with self._changed:
            while True:
                if self._closed:
                    raise RuntimeError("the session is closed")
                if self._idle:
                    return self._idle.pop()
                if self._live < self.size:
                    self._live += 1
                    break
                self._changed.wait()
        try:
            return self._create()  # NOTE: outside the lock, so threads create in parallel.
        except BaseException:
            self._forget()
            raise

    def release(self, instance: ModelInstance, healthy: bool = True) -> None:
        """Return ``instance``; an unhealthy one (it trapped) is dropped, not reused."""
        with self._changed:
            if healthy and not self._closed:
                self._idle.append(instance)
            else:
                self._live -= 1
                instance.close()
            self._changed.notify()

    def _forget(self) -> None:
        with self._changed:
            self._live -= 1
            self._changed.notify()

    def close(self) -> None:
        """Drop idle instances and refuse further ``acquire`` calls (waiters raise too)."""
        with self._changed:
            self._closed = True
            self._live -= len(self._idle)
            for instance in self._idle:
                instance.close()
            self._idle.clear()
            self._changed.notify_all()
