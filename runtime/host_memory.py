"""The linear memory of a threaded model: one set of bytes behind an unshared memory in each
of the team's stores (issue #13).

A module that imports its memory, or whose memory is shared, reaches the memory's base
through a pointer in its instance, and cranelift at opt level ``none`` (the dense kernels'
level) reloads both on every access: measured 1.06-1.18x the time of the same kernel on a
memory its module defines unshared (``bench/threads.py``), which is how a one-thread session
links them. So in a threaded session the caller's merged model and every worker's module
each *define* their linear memory, unshared, and the engine's memory creator
(``install``) backs all of them with one ``Backing``: the same address range, reserved once
with wasmtime's reservation and a guard region on each side (so an access past the end is
a clean trap in any store). Only the one-page control memory the threads wait on is a wasm
shared memory.

Each store's memory keeps its own size (a ``_View``; the backing's mapped size is the
largest): the caller's grows it; a worker grows its own to the caller's size before each
job (``wasm_kernels.parallel``), since ``memory.copy`` and ``memory.fill`` check it.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import mmap
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long)
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
# NOTE: Linux's values (Python's mmap module lacks PROT_NONE and MAP_NORESERVE before 3.13)
_PROT_NONE, _PROT_READ_WRITE = 0, mmap.PROT_READ | mmap.PROT_WRITE
_MAP_NORESERVE = 0x4000
_MADV_HUGEPAGE = 14
_HUGE_PAGE = 1 << 21
_FAILED = ctypes.c_void_p(-1).value


def advise_written_huge_pages(address: int, size: int) -> None:
    """Let Linux's khugepaged collapse the whole 2 MiB pages of ``address .. address + size``,
    bytes already written (a model's weights), into transparent huge pages in the background
    (``madvise(MADV_HUGEPAGE)``); best effort: nothing happens elsewhere or when the system
    refuses. NOTE: advised before the write, the first touch compacts memory synchronously
    (THP ``defrag`` in ``madvise`` mode, a common default): 0.1-0.6 s more at load; advised
    after it, no page faults under the advice, so the load costs nothing and a long-lived
    session's weights move to huge pages within about a minute (bench/README.md)."""
    start = -(-address // _HUGE_PAGE) * _HUGE_PAGE
    end = (address + size) // _HUGE_PAGE * _HUGE_PAGE
    if sys.platform.startswith("linux") and end > start:
        _libc.madvise(start, end - start, _MADV_HUGEPAGE)


class Backing:
    """The bytes of one linear memory that the memories of several stores share. Its address
    range is taken when wasmtime creates the first memory on it (with the reservation and
    guard size wasmtime asks for) and freed when the last such memory is dropped. The first
    memory starts with ``initial`` bytes (or its own minimum, if larger)."""

    def __init__(self, initial: int = 0) -> None:
        self.initial = initial
        self.base = 0
        self.size = 0
        self._start = 0
        self._span = 0
        self._reserved = 0
        self._users = 0

    def _open(self, reserved: int, guard: int) -> None:
        if self._start:
            if reserved != self._reserved:
                raise ValueError(f"a memory reserving {reserved} bytes cannot share one "
                                 f"reserving {self._reserved}")
            return
        span = guard + reserved + guard
        start = _libc.mmap(None, span, _PROT_NONE,
                           mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
        if start in (None, _FAILED):
            raise MemoryError(f"could not reserve {span} bytes of address space "
                              f"(errno {ctypes.get_errno()})")
        self._start, self._span, self._reserved = start, span, reserved
        self.base = start + guard

    def grow(self, size: int) -> None:
        """Make the first ``size`` bytes readable and writable (no change if they are).

        Raises:
            MemoryError: past the reservation, or the system refused.
        """
        if size <= self.size:
            return
        if size > self._reserved:
            raise MemoryError(f"{size} bytes exceed the {self._reserved}-byte reservation")
        if _libc.mprotect(self.base, size, _PROT_READ_WRITE) != 0:
            raise MemoryError(f"could not map {size} bytes (errno {ctypes.get_errno()})")
        self.size = size

    def _close(self) -> None:
        self._users -= 1
        if self._users == 0 and self._start:
            _libc.munmap(self._start, self._span)
            self._start = self.base = self.size = 0


@dataclass
class _View:
    """One store's memory on a ``Backing``: its size is the store's own (what it grew to)."""

    backing: Backing
    size: int


_memories: dict[int, _View] = {}
"""Each live wasmtime memory this creator made (by the ``env`` it handed wasmtime)."""
_numbers = itertools.count(1)
_current = threading.local()


@contextlib.contextmanager
def backing(memory: Backing) -> Iterator[None]:
    """Back the unshared memories that instances created in this block define with
    ``memory``."""
    previous = getattr(_current, "backing", None)
    _current.backing = memory
    try:
        yield
    finally:
        _current.backing = previous


def _error(message: str) -> int:
    error = ffi.wasmtime_error_new(message.encode())
    return ctypes.cast(error, ctypes.c_void_p).value or 0


@ffi.wasmtime_memory_get_callback_t
def _get(env: int, size: Any, maximum: Any) -> int:
    view = _memories[env]
    size[0] = view.size
    maximum[0] = view.backing._reserved
    return view.backing.base


@ffi.wasmtime_memory_grow_callback_t
def _grow(env: int, size: int) -> int:
    view = _memories[env]
    try:
        view.backing.grow(size)
    except MemoryError as err:
        return _error(str(err))
    view.size = size
    return 0


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _drop(env: int) -> None:
    view = _memories.pop(env, None)
    if view is not None:
        view.backing._close()


@ffi.wasmtime_new_memory_callback_t
def _new(env: int, ty: Any, minimum: int, maximum: int, reserved: int, guard: int,
         out: Any) -> int:
    # NOTE: a shared memory, or one created outside a ``backing`` block, gets its own bytes.
    current = getattr(_current, "backing", None)
    memory = Backing() if current is None or ffi.wasmtime_memorytype_isshared(ty) else current
    try:
        memory._open(reserved, guard)
        memory.grow(max(minimum, memory.initial))
    except Exception as err:  # NOTE: nothing may unwind into wasmtime; it reports this
        return _error(f"{type(err).__name__}: {err}")
    number = next(_numbers)
    memory._users += 1
    _memories[number] = _View(memory, memory.size)
    out[0].env = number
    out[0].get_memory = _get
    out[0].grow_memory = _grow
    out[0].finalizer = _drop
    return 0


_CREATOR = ffi.wasmtime_memory_creator_t(None, _new, ctypes.CFUNCTYPE(None, ctypes.c_void_p)())


def install(config: wasmtime.Config) -> None:
    """Create every memory of engines made from ``config`` here (see ``backing``). NOTE:
    wasmtime then cannot map a module's data in copy-on-write (``memory_init_cow``: it
    would abort); instantiation copies it."""
    config.memory_init_cow = False
    ffi.wasmtime_config_host_memory_creator_set(config.ptr(), ctypes.byref(_CREATOR))
