"""SIGINT and SIGTERM stop the CLI promptly, with exit code 128 + the signal number, even
while a guest runs.

Python runs signal handlers only between bytecodes of the main thread, and a guest runs
machine code until it returns (it may never, without a timeout); an exception raised by a
handler inside a host function called from the guest could even be swallowed on the way out
of a ctypes callback. So while the main thread is in a guest call (``guest_call``), the
handler does nothing and a watcher thread, woken through ``signal.set_wakeup_fd``, ends the
process at once. Otherwise the handler raises ``Interrupted``, and the watcher ends the
process only if the main thread has not left the guarded block within ``GRACE_SECONDS``.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

GRACE_SECONDS = 1.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_MAIN = threading.main_thread()


class _Flag:
    """Whether the main thread is in a guest call: a plain attribute, not an ``Event``,
    because it is set and cleared around every call (an ``Event`` takes a lock each time,
    microseconds on a small model's run); the GIL makes each read and write atomic."""

    set_now = False


_main_in_guest = _Flag()


class Interrupted(BaseException):
    """A stop signal arrived; ``exit_code`` is 128 + its number (130 for SIGINT, 143 for
    SIGTERM). A ``BaseException``, like ``KeyboardInterrupt``, so no handler swallows it."""

    def __init__(self, signum: int):
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


class guest_call:  # noqa: N801  # NOTE: used as ``with guest_call():``, like a function.
    """Mark a call into guest code (only the main thread's calls matter). A class rather than
    a ``contextmanager`` generator: it wraps every guest call, so its cost counts."""

    __slots__ = ("_marks",)

    def __enter__(self) -> None:
        self._marks = threading.current_thread() is _MAIN and not _main_in_guest.set_now
        if self._marks:
            _main_in_guest.set_now = True

    def __exit__(self, *exc: object) -> None:
        if self._marks:
            _main_in_guest.set_now = False


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise ``Interrupted`` in the main thread, or end
    the process with the same exit code when the main thread is running a guest. Outside the
    main thread this does nothing (only it may set signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    left = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        if not _main_in_guest.set_now:
            raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(read_end, left),
                               name="wasmnn-signals", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        left.set()
        signal.set_wakeup_fd(previous_fd)
        for signum, old in previous.items():
            signal.signal(signum, old)
        os.close(write_end)  # NOTE: ends the watcher's read with EOF
        watcher.join()
        os.close(read_end)


def _watch(read_end: int, left: threading.Event) -> None:
    while True:
        data = os.read(read_end, 1)
        if not data:
            return
        if data[0] not in STOP_SIGNALS:
            continue
        if _main_in_guest.set_now or not left.wait(GRACE_SECONDS):
            os.write(2, f"wasmnn: interrupted by {signal.Signals(data[0]).name}\n".encode())
            os._exit(128 + data[0])
