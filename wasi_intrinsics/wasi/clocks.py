"""WASI clocks: wall time, monotonic time and CPU time, in nanoseconds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from ..intrinsic import HostContext, IntrinsicModule, i32, i64
from .abi import Clock
from .errno import Errno, WasiError
from .memory import write_u64
from .syscall import syscall

clocks = IntrinsicModule("wasi_clocks")

# clock id -> (reader in ns, name for time.get_clock_info)
ClockName = Literal["time", "monotonic", "process_time", "thread_time"]
_CLOCKS: dict[int, tuple[Callable[[], int], ClockName]] = {
    Clock.REALTIME: (time.time_ns, "time"),
    Clock.MONOTONIC: (time.monotonic_ns, "monotonic"),
    Clock.PROCESS_CPUTIME_ID: (time.process_time_ns, "process_time"),
    Clock.THREAD_CPUTIME_ID: (time.thread_time_ns, "thread_time"),
}


def now(clock: int) -> int:
    """The current time of WASI clock ``clock`` in ns.

    Raises:
        WasiError: ``EINVAL`` for an unknown clock id.
    """
    if clock not in _CLOCKS:
        raise WasiError(Errno.EINVAL, f"unknown clock id {clock}; known: {sorted(_CLOCKS)}")
    return _CLOCKS[clock][0]()


@syscall(clocks)
def clock_res_get(ctx: HostContext, clock: i32, resolution: i32) -> None:
    """Write the resolution of ``clock`` in ns (at least 1)."""
    now(clock)
    seconds = time.get_clock_info(_CLOCKS[clock][1]).resolution
    write_u64(ctx.memory, resolution, max(1, round(seconds * 1e9)))


@syscall(clocks)
def clock_time_get(ctx: HostContext, clock: i32, precision: i64, timestamp: i32) -> None:
    """Write the current time of ``clock`` in ns (``precision`` is a hint and ignored)."""
    write_u64(ctx.memory, timestamp, now(clock))
