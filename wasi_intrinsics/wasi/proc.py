"""WASI process calls."""

from __future__ import annotations

from ..intrinsic import HostContext, IntrinsicModule, i32

proc = IntrinsicModule("wasi_proc")


class ProcExit(Exception):
    """Raised by ``proc_exit``; unwinds the guest and surfaces with the exit ``code``."""

    def __init__(self, code: int):
        super().__init__(f"the program exited with code {code}")
        self.code = code


@proc.function
def proc_exit(ctx: HostContext, code: i32) -> None:
    """Terminate the program with exit ``code``."""
    raise ProcExit(code)
