"""WASI process calls: exit, signals (not available in the sandbox) and yielding."""

from __future__ import annotations

import os

from ..intrinsic import HostContext, IntrinsicModule, i32
from .errno import Errno, WasiError
from .syscall import syscall

proc = IntrinsicModule("wasi_proc")


class ProcExit(Exception):
    """Raised by ``proc_exit``; unwinds the guest and surfaces with the exit ``code``."""

    def __init__(self, code: int):
        super().__init__(f"the program exited with code {code}")
        self.code = code


@proc.function
def proc_exit(ctx: HostContext, code: i32) -> None:
    """Terminate the program with exit ``code``."""
    raise ProcExit(code & 0xFFFFFFFF)


@syscall(proc)
def proc_raise(ctx: HostContext, signal: i32) -> None:
    """Signals do not exist in the sandbox: ENOSYS."""
    raise WasiError(Errno.ENOSYS, f"proc_raise({signal})")


@syscall(proc)
def sched_yield(ctx: HostContext) -> None:
    """Let other host threads run."""
    os.sched_yield()
