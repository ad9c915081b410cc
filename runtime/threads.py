"""Intra-op threads: one model call runs its large kernels on several cores.

With ``threads > 1`` the model is merged with its kernels and the dispatch functions of
``wasm_kernels.parallel`` into one module (``runtime.merge``), so each store holds exactly
one module that touches the linear memory and the engine keeps its guard pages. Each extra
thread is a *worker*: a host thread with its own compartment (store, limits) holding one
instance of the worker module (the kernels that split, and the dispatch functions). The
merged model and every worker module define their linear memory, and the engine backs them
all with the same bytes (``runtime.host_memory``, a ``Backing``); the threads wait on a
one-page shared memory the merged model defines (its control memory).
While a call runs (``Team.run``) the workers sit inside wasm, parked on
``memory.atomic.wait32`` between jobs, so a parallel kernel costs no host round trip.
Without a ``timeout`` or ``fuel`` they stay there between calls too, until the instance is
closed or collected; with a limit they leave wasm after each call and wait in Python, where
the next call re-arms their stores as it re-arms the caller's. A trap or a limit in any
thread ends the call with that thread's error.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import wasmtime

import wasm_kernels
from wasm_kernels import abi, parallel
from wasm_kernels.wasm import WasmFormatError, read_module

from . import cache, host_memory
from . import metadata as md
from .compartment import Compartment
from .errors import LimitExceeded, ModelFormatError
from .linker import RegistryResolver, Resolved

MAX_THREADS = 16
"""The most threads one call may use (``runtime.load(threads=...)``)."""
FEATURES = (("threads", True),)
"""The engine features of a compartment whose memory is shared (``Compartment(features=)``)."""
OPT_LEVEL = "none"
"""The cranelift opt level of a merged model and of the workers' module (one module has one
level; see ``bench/threads.py``), unless ``opt_level`` picks ``SPEED_FAMILIES``' level."""
SPEED_FAMILIES = frozenset({"qlinear"})
"""Kernel families that make a merged model and its workers compile at ``"speed"``: the
integer products (``qlinear``, ``qconv``) ran 0.73-0.76x as fast at ``"none"`` with a shared
memory (cranelift reloads the memory's base before each of their loads), and an int8 model
spends most of its time in them: at ``"speed"`` 2 threads took 1.17-1.37x less CPU time in
all on MiniLM, ResNet-18 and MobileNetV2 int8 (bench/README.md, Threads, int8). NOTE:
measured over a wasm shared memory, before ``runtime.host_memory``; not measured since."""
SPIN = 200_000
"""How many times a thread re-reads the control word it waits on before it sleeps (a sleeping
thread wakes late); without a ``timeout`` or ``fuel`` only: a spinning worker burns fuel.
Measured at load 1.1 (``bench/threads.py --only spin``, 2 threads over 1): MiniLM b1 0 spins
1.61-1.65x, 20,000 1.73-1.79x, 200,000 1.76x; ResNet-18 1.79x, 1.77-1.80x, 1.82-1.86x; the
threads' CPU over wall 1.83-1.87 -> 1.96."""
PAGE = 65536
Compiled = tuple[wasmtime.Module, Any]
T = TypeVar("T")


def available_cores() -> int:
    """The cores this process may run on (``os.sched_getaffinity``), at most ``MAX_THREADS``:
    what ``threads="auto"`` means."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # NOTE: not on every platform (macOS, Windows)
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_THREADS))


def check_threads(threads: object, weights_bytes: int | None = None) -> int:
    """The thread count ``threads`` asks for: an integer, or ``"auto"``: ``available_cores``
    for a model of ``weights_bytes`` of at least ``parallel.AUTO_WEIGHTS``, else 1 (also
    when unknown: ``None``).

    Raises:
        TypeError: neither an integer nor ``"auto"``.
        ValueError: outside ``[1, MAX_THREADS]``.
    """
    if threads == "auto":
        large = weights_bytes is not None and weights_bytes >= parallel.AUTO_WEIGHTS
        return available_cores() if large else 1
    if not isinstance(threads, int) or isinstance(threads, bool):
        raise TypeError(f"threads must be an integer or 'auto', got {threads!r}")
    if not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads must be between 1 and {MAX_THREADS}, got {threads!r}")
    return threads


class _ImportableSharedMemory(wasmtime.SharedMemory):
    """wasmtime-py 50.0.1's ``SharedMemory._as_extern`` wraps its pointer twice (``ctypes.
    pointer(self.ptr())``), so ``Instance`` refuses it as an import with a ctypes
    ``TypeError``; this passes the pointer as is."""

    def _as_extern(self) -> Any:
        from wasmtime import _ffi as ffi

        union = ffi.wasmtime_extern_union(sharedmemory=self.ptr())
        return ffi.wasmtime_extern_t(ffi.WASMTIME_EXTERN_SHAREDMEMORY, union)


def importable(memory: wasmtime.SharedMemory) -> wasmtime.SharedMemory:
    """``memory`` (a shared memory an instance exports) such that ``wasmtime.Instance``
    accepts it as an import, stepping around the binding's fault when this wasmtime-py has
    it."""
    try:
        memory._as_extern()
    except TypeError:
        memory.__class__ = _ImportableSharedMemory
    return memory


class SharedLinearMemory:
    """The linear memory of a threaded instance (its ``Backing``) behind the
    ``wasmtime.Memory`` methods the runtime uses (with a ``store`` argument they ignore: the
    bytes belong to every store of the team), so WASI and the session handle it as they
    handle a one-thread instance's memory."""

    def __init__(self, pages: int):
        self.backing = host_memory.Backing(pages * PAGE)

    def data_ptr(self, store: Any = None) -> Any:
        return ctypes.cast(self.backing.base, ctypes.POINTER(ctypes.c_ubyte))

    def data_len(self, store: Any = None) -> int:
        return self.backing.size

    def size(self, store: Any = None) -> int:
        """Pages."""
        return self.backing.size // PAGE

    def write(self, store: Any, data: bytes, offset: int) -> None:
        """Copy ``data`` to ``offset``.

        Raises:
            IndexError: ``data`` does not fit.
        """
        if offset < 0 or offset + len(data) > self.data_len():
            raise IndexError(f"writing {len(data)} bytes at {offset} overflows the "
                             f"{self.data_len()}-byte memory")
        ctypes.memmove(self.backing.base + offset, data, len(data))


@functools.cache
def _worker_wasm(isa: str, names: frozenset[str]) -> bytes:
    source = Path(wasm_kernels.__file__).parent
    subset = hashlib.sha256("\0".join(sorted(names)).encode()).hexdigest()[:16]
    return cache.generated_module(f"worker-{isa}-{subset}", cache.process_fingerprint(source),
                                  lambda: parallel.build_worker(isa, names))


def weights_bytes(wasm: bytes) -> int | None:
    """The model's weight bytes by its metadata; ``None`` when it has none that parses (the
    session's own checks then say what is wrong)."""
    try:
        section = read_module(wasm).custom(md.SECTION)
        return md.parse(section).weights_bytes
    except (WasmFormatError, ModelFormatError, TypeError):
        return None


def splitting(isa: str, names: frozenset[str]) -> frozenset[str]:
    """The kernels among ``names`` that run on several threads."""
    return frozenset(names & parallel.splits(isa).keys())


def opt_level(names: frozenset[str]) -> str:
    """The opt level of a merged model importing kernels ``names``, and of its workers'
    module: ``"speed"`` when one of them is of ``SPEED_FAMILIES``, else ``OPT_LEVEL``."""
    speed = any(abi.BY_NAME[n].family in SPEED_FAMILIES for n in names if n in abi.BY_NAME)
    return "speed" if speed else OPT_LEVEL


def compile_worker(compartment: Compartment, isa: str, names: frozenset[str]
                   ) -> Compiled | None:
    """The workers' module for the kernels among ``names`` that split (at
    ``opt_level(names)``), ``None`` when none does."""
    split = splitting(isa, names)
    return (compartment.compile(_worker_wasm(isa, split), opt_level(names)) if split
            else None)


def _export(store: wasmtime.Store, instance: wasmtime.Instance, name: str) -> wasmtime.Func:
    func = instance.exports(store)[parallel.EXPORTS[name]]
    assert isinstance(func, wasmtime.Func)  # NOTE: our own module's export
    return func


class _Worker:
    """One worker: its compartment holding one instance of the worker module over the shared
    memory, and the functions its host thread calls."""

    def __init__(self, compartment: Compartment, module: Compiled, memory: SharedLinearMemory,
                 control: wasmtime.SharedMemory):
        self.compartment = compartment
        registry = RegistryResolver()
        registry.register(parallel.CONTROL[0], {parallel.CONTROL[1]: Resolved(
            control, parallel.CONTROL_TYPE)})
        with backed_by(memory):
            instance = compartment.instantiate(*module, registry)
        own = instance.exports(compartment.store)[parallel.MEMORY_EXPORTS["memory"]]
        assert isinstance(own, wasmtime.Memory)  # NOTE: parallel.build_worker's own
        self.memory = own
        """This worker's view of the linear memory (its store's size of it)."""
        self.enter = _export(compartment.store, instance, "worker")
        self.fail = _export(compartment.store, instance, "fail")


class Team:
    """The workers of one instance, and the dispatch functions of its merged model.

    Without a ``timeout`` or ``fuel`` the workers enter wasm once and stay parked there
    between calls (a call costs no host round trip at all); with a limit they enter for each
    call, so that each call re-arms their stores as it re-arms the caller's."""

    def __init__(self, main: Compartment, make_compartment: Callable[[], Compartment],
                 threads: int, module: Compiled, memory: SharedLinearMemory,
                 model: wasmtime.Instance):
        """Start ``threads - 1`` workers, each instantiating ``module`` in its compartment
        over ``memory`` and the control memory of ``model``, the caller's instance of the
        merged model (``runtime.merge``).

        Raises:
            LinkError, Trap: as ``Compartment.instantiate``.
        """
        self._main = main
        self._reset = _export(main.store, model, "reset")
        self._release = _export(main.store, model, "release")
        self.threads = threads
        self._per_call = main.limits.timeout is not None or main.limits.fuel is not None
        control = model.exports(main.store)[parallel.MEMORY_EXPORTS["control"]]
        assert isinstance(control, wasmtime.SharedMemory)  # NOTE: runtime.merge defines it
        control = importable(control)
        self._workers = [_Worker(make_compartment(), module, memory, control)
                         for _ in range(threads - 1)]
        self._changed = threading.Condition()
        self._calls = 0
        self._running = 0
        self._closed = False
        self._errors: list[BaseException] = []
        self._threads = [threading.Thread(target=self._serve, args=(part, worker),
                                          name=f"wasmnn-worker-{part}", daemon=True)
                         for part, worker in enumerate(self._workers, start=1)]
        for thread in self._threads:
            thread.start()
        if not self._per_call:
            self._enter()

    def run(self, call: Callable[[], T]) -> T:
        """``call()`` (the model's entry) with the workers inside wasm for its length.

        Raises:
            Trap: a worker trapped or hit a limit (its error, ahead of the caller's), or
                whatever ``call`` raises.
        """
        if self._per_call:
            self._enter()
        try:
            result = call()
        finally:
            if self._per_call:
                self._leave()
            if self._errors:
                raise self._errors[0] from None
        return result

    def _enter(self) -> None:
        """Reset the control words, then let every worker into ``worker``."""
        self._main.call(self._reset, self._main.store, self.threads,
                        0 if self._per_call else SPIN)
        with self._changed:
            self._calls += 1
            self._running = len(self._workers)
            self._errors = []
            self._changed.notify_all()

    def _leave(self) -> None:
        """Release the workers and wait until each has left wasm."""
        self._main.call(self._release, self._main.store)
        with self._changed:
            self._changed.wait_for(lambda: self._running == 0)

    def _called_since(self, seen: int) -> bool:
        return self._calls != seen or self._closed

    def _serve(self, part: int, worker: _Worker) -> None:
        seen = 0
        while True:
            with self._changed:
                self._changed.wait_for(functools.partial(self._called_since, seen))
                if self._closed:
                    return
                seen = self._calls
            store = worker.compartment.store
            try:
                worker.compartment.call(worker.enter, store, part)
            except BaseException as error:  # NOTE: handed to the caller's thread by run()
                with self._changed:
                    self._errors.append(error)
                worker.compartment.call(worker.fail, store)
            finally:
                with self._changed:
                    self._running -= 1
                    self._changed.notify_all()

    def close(self) -> None:
        """Release the workers and join their threads (between calls; once)."""
        if self._closed:
            return
        if not self._per_call:
            self._leave()
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        for thread in self._threads:
            thread.join()


def memory(compartment: Compartment, pages: int) -> SharedLinearMemory:
    """The linear memory of ``pages`` for a threaded instance in ``compartment``: the bytes
    the merged model's memory starts with (instantiate it in ``backed_by``), up to its share
    of ``max_memory`` (``Compartment.plan``), which each store's limits then cap.

    Raises:
        LimitExceeded: ``pages`` is over the memory's share of ``max_memory``.
    """
    max_pages = min(wasm_kernels.MAX_PAGES, compartment.shares.memory_bytes // PAGE)
    if pages > max_pages:
        raise LimitExceeded("memory", f"memory limit of {compartment.limits.max_memory} bytes "
                            f"exceeded: the model needs {pages} pages "
                            f"({compartment.shares.describe()})")
    return SharedLinearMemory(pages)


def backed_by(memory: SharedLinearMemory) -> Any:
    """A ``with`` block in which instances' linear memories are ``memory``'s bytes."""
    return host_memory.backing(memory.backing)
