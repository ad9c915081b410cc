"""Blocking WASI calls wake at the caller's deadline: the host's time limit holds while the
guest waits in the host (epoch interruption only stops code running inside wasm)."""

from __future__ import annotations

import select
import time

from ..intrinsic import HostContext


class DeadlineExceeded(Exception):
    """Raised by a WASI call that would wait past the caller's deadline; it unwinds the guest
    like ``ProcExit``, and the runtime reports it as the time limit it is."""

    def __init__(self, call: str):
        super().__init__(f"the time limit passed while the guest waited in {call}")


def remaining(ctx: HostContext) -> float | None:
    """Seconds until the caller's deadline (at least 0), or ``None`` without one."""
    deadline = ctx.state.deadline()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def wait_ready(ctx: HostContext, host_fd: int, write: bool, call: str) -> None:
    """Block until ``host_fd`` is ready to read (or write), but not past the deadline.

    Raises:
        DeadlineExceeded: the deadline came first.
    """
    left = remaining(ctx)
    if left is None:
        return
    waiting = ([], [host_fd]) if write else ([host_fd], [])
    ready = select.select(*waiting, [], left)
    if not ready[0] and not ready[1]:
        raise DeadlineExceeded(call)


def check(ctx: HostContext, call: str) -> None:
    """Between chunks of long host work: stop once the deadline has passed.

    Raises:
        DeadlineExceeded: it has.
    """
    if remaining(ctx) == 0.0:
        raise DeadlineExceeded(call)
