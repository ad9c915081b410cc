"""The guest's file descriptors: what each one is on the host and the rights it carries."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import BinaryIO, TypeVar

from .abi import Filetype, Rights
from .errno import Errno, WasiError


@dataclass
class Descriptor:
    """One guest fd: its type and its rights (``inheriting`` passes to fds opened through it)."""

    filetype: Filetype
    rights: Rights
    inheriting: Rights

    def require(self, needed: Rights) -> None:
        """Raises: WasiError: ``ENOTCAPABLE`` when this fd lacks any of ``needed``."""
        missing = needed & ~self.rights
        if missing:
            raise WasiError(Errno.ENOTCAPABLE, f"fd lacks rights {missing!r}")

    def close(self) -> None:
        """Release the host resource behind this fd."""


@dataclass
class Stream(Descriptor):
    """A host stream given by the embedder (stdin, stdout, stderr)."""

    stream: BinaryIO


@dataclass
class HostDescriptor(Descriptor):
    """A descriptor backed by a host fd that this layer opened (and so closes)."""

    fd: int

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class HostFile(HostDescriptor):
    """A non-directory opened inside a preopen."""


@dataclass
class Directory(HostDescriptor):
    """A directory inside (or at the root of) a preopen; ``preopen`` is its guest name if it
    was preopened by the host."""

    preopen: str | None = None


def filetype(mode: int) -> Filetype:
    """The WASI file type for a host ``st_mode``."""
    for test, kind in ((stat.S_ISREG, Filetype.REGULAR_FILE), (stat.S_ISDIR, Filetype.DIRECTORY),
                       (stat.S_ISLNK, Filetype.SYMBOLIC_LINK),
                       (stat.S_ISCHR, Filetype.CHARACTER_DEVICE),
                       (stat.S_ISBLK, Filetype.BLOCK_DEVICE),
                       (stat.S_ISSOCK, Filetype.SOCKET_STREAM)):
        if test(mode):
            return kind
    return Filetype.UNKNOWN


D = TypeVar("D", bound=Descriptor)

# The errno a guest gets for an fd of the wrong kind: a file call on a directory, and the reverse.
_WRONG_KIND = {HostFile: Errno.EBADF, Directory: Errno.ENOTDIR, Stream: Errno.EBADF}


class FdTable:
    """Guest fd numbers -> descriptors; new fds take the lowest free number, as POSIX does."""

    def __init__(self) -> None:
        self._fds: dict[int, Descriptor] = {}

    def add(self, descriptor: Descriptor) -> int:
        """Give ``descriptor`` the lowest free fd number and return it."""
        fd = 0
        while fd in self._fds:
            fd += 1
        self._fds[fd] = descriptor
        return fd

    def get(self, fd: int, kind: type[D], rights: Rights = Rights(0)) -> D:
        """The descriptor ``fd`` as ``kind`` holding ``rights``.

        Raises:
            WasiError: ``EBADF`` for no such fd, ``EBADF``/``ENOTDIR`` for the wrong kind,
                ``ENOTCAPABLE`` for missing rights.
        """
        descriptor = self._fds.get(fd)
        if descriptor is None:
            raise WasiError(Errno.EBADF, f"no open fd {fd}")
        if not isinstance(descriptor, kind):
            raise WasiError(_WRONG_KIND.get(kind, Errno.EBADF),
                            f"fd {fd} is a {type(descriptor).__name__}, not a {kind.__name__}")
        descriptor.require(rights)
        return descriptor

    def close(self, fd: int) -> None:
        """Raises: WasiError: ``EBADF`` for no such fd."""
        self.get(fd, Descriptor)
        self._fds.pop(fd).close()

    def renumber(self, fd: int, to: int) -> None:
        """Move ``fd`` to number ``to``, closing what ``to`` held.

        Raises:
            WasiError: ``EBADF`` when either fd is not open.
        """
        self.get(fd, Descriptor)
        self.get(to, Descriptor)
        if fd != to:
            self._fds.pop(to).close()
            self._fds[to] = self._fds.pop(fd)

    def close_all(self) -> None:
        """Close every host resource (the instance is done)."""
        for descriptor in self._fds.values():
            descriptor.close()
        self._fds.clear()
