"""Per-instance WASI state: what the host granted (args, environment, streams, directories)."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

from .abi import ALL_RIGHTS, DIRECTORY_RIGHTS, WRITE_RIGHTS, Filetype, Rights
from .descriptors import Directory, FdTable, Stream

_STREAM_RIGHTS = Rights.FD_FDSTAT_SET_FLAGS | Rights.FD_FILESTAT_GET | Rights.POLL_FD_READWRITE


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
    and both output streams are captured in memory. ``preopens`` are ``Preopen`` values or
    ``(host_dir, guest_path)`` pairs, numbered from fd 3 in order.
    """

    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    stdin: BinaryIO = field(default_factory=io.BytesIO)
    stdout: BinaryIO = field(default_factory=io.BytesIO)
    stderr: BinaryIO = field(default_factory=io.BytesIO)
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


class WasiState:
    """The live state behind one WASI instance: its config and open file descriptors.

    Raises:
        FileNotFoundError / NotADirectoryError: a preopen's host directory does not exist.
    """

    def __init__(self, config: WasiConfig | None = None):
        self.config = config or WasiConfig()
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
