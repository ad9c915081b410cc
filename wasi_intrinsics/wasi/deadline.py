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
    if not ready_fds([host_fd], left, write):
        raise DeadlineExceeded(call)


def ready_fds(fds: list[int], seconds: float | None, write: bool = False) -> list[int]:
    """The ``fds`` ready to read (or write) within ``seconds`` (``None``: wait for one).
    ``poll``, not ``select``: a busy host process has fds past ``select``'s 1024."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLOUT if write else select.POLLIN)
    # NOTE: an error or hang-up counts as ready: the read or write then reports it.
    return [fd for fd, _ in poller.poll(None if seconds is None else seconds * 1000)]


def check(ctx: HostContext, call: str) -> None:
    """Between chunks of long host work: stop once the deadline has passed.

    Raises:
        DeadlineExceeded: it has.
    """
    if remaining(ctx) == 0.0:
        raise DeadlineExceeded(call)
