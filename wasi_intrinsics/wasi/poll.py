"""WASI ``poll_oneoff``: wait for clocks and fd readiness.

Files and output streams are always ready. A host input stream with a real fd (the CLI's
stdin) is ready when ``poll`` says so; in-memory streams are always ready.
"""

from __future__ import annotations

import io
import os
import time

from ..intrinsic import HostContext, IntrinsicModule, i32
from .abi import EventType, Rights
from .clocks import now
from .deadline import DeadlineExceeded, ready_fds, remaining
from .descriptors import Descriptor, HostFile, Stream
from .errno import Errno, WasiError
from .memory import pack, unpack, write_u32
from .syscall import syscall

poll = IntrinsicModule("wasi_poll")

_SUBSCRIPTION = 48
_EVENT = 32
_ABSTIME = 1
_WAIT_CHUNK = 86400.0  # seconds; poll() refuses timeouts near 2^64 ns
MAX_SUBSCRIPTIONS = 1024
"""Subscriptions one call may pass (as ``poll`` is bounded by the fd limit); more is EINVAL."""
Event = tuple[int, int, int, int]  # userdata, errno, type, nbytes


def _waitable_fd(descriptor: Descriptor, kind: int) -> int | None:
    """The host fd to ``poll`` for a read subscription on a host stream, else None."""
    if kind != EventType.FD_READ or not isinstance(descriptor, Stream):
        return None
    try:
        return descriptor.stream.fileno()
    except (OSError, io.UnsupportedOperation):
        return None


def _nbytes(descriptor: Descriptor, kind: int) -> int:
    if kind == EventType.FD_READ and isinstance(descriptor, HostFile):
        return max(0, os.fstat(descriptor.fd).st_size - os.lseek(descriptor.fd, 0, os.SEEK_CUR))
    return 0


@syscall(poll)
def poll_oneoff(ctx: HostContext, subscriptions: i32, events: i32, nsubscriptions: i32,
                nevents: i32) -> None:
    """Block until at least one subscription fires; write its events and their count."""
    count = nsubscriptions & 0xFFFFFFFF
    if not 0 < count <= MAX_SUBSCRIPTIONS:
        raise WasiError(Errno.EINVAL, f"poll_oneoff got {count} subscriptions; it takes 1 to "
                                      f"{MAX_SUBSCRIPTIONS}")
    memory = ctx.memory
    ready: list[Event] = []
    clocks: list[tuple[int, int]] = []  # (ns to wait, userdata)
    waiting: dict[int, tuple[int, int]] = {}  # host fd -> (userdata, type)
    for index in range(count):
        base = subscriptions + _SUBSCRIPTION * index
        userdata, kind = unpack(memory, base, "QB")
        if kind == EventType.CLOCK:
            clock, timeout, _, flags = unpack(memory, base + 16, "I4xQQH")
            try:
                delay = timeout - now(clock) if flags & _ABSTIME else timeout
            except WasiError as error:
                ready.append((userdata, error.errno, kind, 0))
                continue
            clocks.append((max(0, delay), userdata))
        elif kind in (EventType.FD_READ, EventType.FD_WRITE):
            (file,) = unpack(memory, base + 16, "I")
            try:
                descriptor = ctx.state.fds.get(file, Descriptor, Rights.POLL_FD_READWRITE)
            except WasiError as error:
                ready.append((userdata, error.errno, kind, 0))
                continue
            host_fd = _waitable_fd(descriptor, kind)
            if host_fd is None:
                ready.append((userdata, Errno.SUCCESS, kind, _nbytes(descriptor, kind)))
            else:
                waiting[host_fd] = (userdata, kind)
        else:
            raise WasiError(Errno.EINVAL, f"unknown subscription type {kind}")
    wait = 0 if ready else min((delay for delay, _ in clocks), default=None)
    start = time.monotonic_ns()
    readable = _wait(ctx, list(waiting), wait)
    ready += [(waiting[fd][0], Errno.SUCCESS, waiting[fd][1], 0) for fd in readable]
    elapsed = time.monotonic_ns() - start
    ready += [(userdata, Errno.SUCCESS, EventType.CLOCK, 0) for delay, userdata in clocks
              if delay <= elapsed or (not ready and delay == wait)]
    for index, (userdata, errno, kind, nbytes) in enumerate(ready):
        pack(memory, events + _EVENT * index, "QHB5xQH6x", userdata, errno, kind, nbytes, 0)
    write_u32(memory, nevents, len(ready))


def _wait(ctx: HostContext, fds: list[int], wait: int | None) -> list[int]:
    """The readable ``fds`` after waiting up to ``wait`` ns (``None``: until one is), in
    chunks, and never past the caller's deadline.

    Raises:
        DeadlineExceeded: the deadline came before any fd or clock.
    """
    end = None if wait is None else time.monotonic() + wait / 1e9
    while True:
        left = None if end is None else max(0.0, end - time.monotonic())
        deadline = remaining(ctx)
        timeout = min(t for t in (left, deadline, _WAIT_CHUNK) if t is not None)
        readable = ready_fds(fds, timeout)
        if readable or (left is not None and left <= timeout):
            return readable
        if deadline is not None and deadline <= timeout:
            raise DeadlineExceeded("poll_oneoff")
