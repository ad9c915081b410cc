"""Per-instance WASI state: what the host granted (args, environment, streams, directories)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

from .abi import ALL_RIGHTS, DIRECTORY_RIGHTS, WRITE_RIGHTS, Filetype, Rights
from .descriptors import Directory, FdTable, Stream

_STREAM_RIGHTS = Rights.FD_FDSTAT_SET_FLAGS | Rights.FD_FILESTAT_GET | Rights.POLL_FD_READWRITE


CAPTURE_BYTES = 64 * 1024
"""How much of each captured output stream is kept in host memory."""


class CappedBuffer(io.BytesIO):
    """An in-memory output stream that keeps the first ``limit`` bytes written and counts the
    rest in ``dropped``, so a guest cannot fill host memory by writing."""

    def __init__(self, limit: int = CAPTURE_BYTES):
        super().__init__()
        self.limit = limit
        self.dropped = 0

    def write(self, data: bytes) -> int:  # type: ignore[override]
        """Keep what fits; report every byte as written (the guest sees no error)."""
        view = memoryview(data).cast("B")
        room = max(0, self.limit - self.tell())
        super().write(view[:room])
        self.dropped += max(0, len(view) - room)
        return len(view)

    def text(self) -> str:
        """What was kept, decoded, with a note of how much was dropped."""
        kept = self.getvalue().decode(errors="replace")
        return kept + (f" [{self.dropped} more bytes dropped]" if self.dropped else "")

    def clear(self) -> None:
        """Forget everything written so far."""
        self.seek(0)
        self.truncate()
        self.dropped = 0


class Preopen(NamedTuple):
    """Host directory ``host`` visible to the guest as ``guest``; ``read_only`` withholds every
    right that changes the file system. Nothing outside ``host`` is reachable through it."""

    host: str
    guest: str
    read_only: bool = False


@dataclass
class WasiConfig:
    """What a WASI program may see. Deny by default: no args, environment or directories.

    ``stdin`` is read from and ``stdout`` / ``stderr`` written to; by default stdin is empty
    and both output streams are captured in memory (the first ``CAPTURE_BYTES`` of each, see
    ``CappedBuffer``). ``preopens`` are ``Preopen`` values or
    ``(host_dir, guest_path)`` pairs, numbered from fd 3 in order.
    """

    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    stdin: BinaryIO = field(default_factory=io.BytesIO)
    stdout: BinaryIO = field(default_factory=CappedBuffer)
    stderr: BinaryIO = field(default_factory=CappedBuffer)
    preopens: list[Preopen | tuple[str, str]] = field(default_factory=list)


def _stream(stream: BinaryIO, rights: Rights) -> Stream:
    tty = stream.isatty()
    return Stream(Filetype.CHARACTER_DEVICE if tty else Filetype.UNKNOWN,
                  rights | _STREAM_RIGHTS, Rights(0), stream)


def open_preopen(preopen: Preopen | tuple[str, str]) -> Directory:
    """Open ``preopen``'s host directory as a guest directory fd with the granted rights.

    Raises:
        NotADirectoryError / FileNotFoundError: the host path is not an existing directory.
    """
    host, guest, read_only = Preopen(*preopen)
    fd = os.open(host, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    withheld = WRITE_RIGHTS if read_only else Rights(0)
    return Directory(Filetype.DIRECTORY, DIRECTORY_RIGHTS & ~withheld, ALL_RIGHTS & ~withheld,
                     fd, guest)


def _no_deadline() -> float | None:
    return None


class WasiState:
    """The live state behind one WASI instance: its config and open file descriptors.

    ``deadline`` tells blocking calls when the caller's time is up (``time.monotonic()``
    seconds, or ``None`` for no limit); they wake then and unwind with ``DeadlineExceeded``.

    Raises:
        FileNotFoundError / NotADirectoryError: a preopen's host directory does not exist.
    """

    def __init__(self, config: WasiConfig | None = None,
                 deadline: Callable[[], float | None] = _no_deadline):
        self.config = config or WasiConfig()
        self.deadline = deadline
        self.fds = FdTable()
        self.fds.add(_stream(self.config.stdin, Rights.FD_READ))
        self.fds.add(_stream(self.config.stdout, Rights.FD_WRITE))
        self.fds.add(_stream(self.config.stderr, Rights.FD_WRITE))
        try:
            for preopen in self.config.preopens:
                self.fds.add(open_preopen(preopen))
        except OSError:
            self.close()
            raise

    def close(self) -> None:
        """Close every host file and directory the guest still holds open."""
        self.fds.close_all()
