"""WASI calls on an open file descriptor: reading, writing, seeking, flags, rights, preopens."""

from __future__ import annotations

import fcntl
import io
import os
import select
import stat
from collections.abc import Callable
from typing import BinaryIO

import numpy as np

from ..intrinsic import HostContext, IntrinsicModule, i32, i64
from .abi import U64, Advice, FdFlags, Rights, Whence
from .deadline import remaining, wait_ready
from .descriptors import Descriptor, Directory, HostDescriptor, HostFile, Stream
from .errno import Errno, WasiError
from .memory import pack, read_iovecs, write_bytes, write_u32, write_u64
from .syscall import syscall

fd = IntrinsicModule("wasi_fd")

# fdflags <-> host open flags; RSYNC has no separate meaning on Linux (it equals O_SYNC).
_HOST_FLAGS = {FdFlags.APPEND: os.O_APPEND, FdFlags.NONBLOCK: os.O_NONBLOCK,
               FdFlags.DSYNC: os.O_DSYNC, FdFlags.SYNC: os.O_SYNC}
_SETTABLE = FdFlags.APPEND | FdFlags.NONBLOCK  # what fcntl(F_SETFL) can change on Linux
MAX_IO_BYTES = 1 << 24
"""Bytes one read or write moves at most; POSIX lets it be short, and the guest loops."""


def host_flags(flags: FdFlags) -> int:
    """The ``os.O_*`` bits for WASI ``fdflags`` (used by ``path_open`` too)."""
    out = 0
    for wasi_flag, host_flag in _HOST_FLAGS.items():
        if flags & wasi_flag:
            out |= host_flag
    return out


def _fdflags(descriptor: Descriptor) -> FdFlags:
    if not isinstance(descriptor, HostFile):
        return FdFlags(0)
    current = fcntl.fcntl(descriptor.fd, fcntl.F_GETFL)
    out = FdFlags(0)
    for wasi_flag, host_flag in _HOST_FLAGS.items():
        if current & host_flag == host_flag:
            out |= wasi_flag
    return out


def _stream_fd(stream: BinaryIO) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return None  # an in-memory stream: never blocks


def _read(ctx: HostContext, descriptor: Descriptor, size: int) -> bytes:
    if isinstance(descriptor, Stream):
        host_fd = _stream_fd(descriptor.stream)
        if host_fd is not None:
            wait_ready(ctx, host_fd, False, "fd_read")
        read = getattr(descriptor.stream, "read1", descriptor.stream.read)
        return bytes(read(size))
    if isinstance(descriptor, HostFile):
        wait_ready(ctx, descriptor.fd, False, "fd_read")  # NOTE: a FIFO can block
        return os.read(descriptor.fd, size)
    raise WasiError(Errno.EISDIR, "cannot read a directory")


def _write(ctx: HostContext, descriptor: Descriptor, data: bytes) -> int:
    if isinstance(descriptor, Stream):
        host_fd = _stream_fd(descriptor.stream)
        if host_fd is None or remaining(ctx) is None:
            descriptor.stream.write(data)
            descriptor.stream.flush()
            return len(data)
        descriptor.stream.flush()
        return _write_until_deadline(ctx, host_fd, data)
    if isinstance(descriptor, HostFile):
        if stat.S_ISREG(os.fstat(descriptor.fd).st_mode):
            return os.write(descriptor.fd, data)  # NOTE: a regular file never blocks
        return _write_until_deadline(ctx, descriptor.fd, data)
    raise WasiError(Errno.EISDIR, "cannot write a directory")


def _write_until_deadline(ctx: HostContext, host_fd: int, data: bytes) -> int:
    """Write ``data`` in pieces a ready fd takes without blocking (``poll`` promises
    room for ``PIPE_BUF`` bytes), so a reader that never drains cannot hold the guest past
    its deadline."""
    done = 0
    while done < len(data):
        wait_ready(ctx, host_fd, True, "fd_write")
        done += os.write(host_fd, data[done:done + select.PIPE_BUF])
        if remaining(ctx) is None:  # NOTE: no deadline: the rest in one blocking write
            done += os.write(host_fd, data[done:])
    return done


def _gather(memory: np.ndarray, iovs: int, iovs_len: int) -> bytes:
    """The bytes the buffers hold, at most ``MAX_IO_BYTES`` of them."""
    chunks, size = [], 0
    for buffer in read_iovecs(memory, iovs, iovs_len):
        chunks.append(buffer[:MAX_IO_BYTES - size].tobytes())
        size += len(chunks[-1])
    return b"".join(chunks)


def _scatter(memory: np.ndarray, iovs: int, iovs_len: int,
             read: Callable[[int], bytes]) -> int:
    buffers = read_iovecs(memory, iovs, iovs_len)
    data = read(min(MAX_IO_BYTES, sum(b.size for b in buffers)))
    done = 0
    for buffer in buffers:
        chunk = data[done:done + buffer.size]
        buffer[:len(chunk)] = np.frombuffer(chunk, np.uint8)
        done += len(chunk)
    return done


@syscall(fd)
def fd_write(ctx: HostContext, file: i32, iovs: i32, iovs_len: i32, nwritten: i32) -> None:
    """Gather-write ``iovs_len`` (pointer, length) buffers to ``file``."""
    descriptor = ctx.state.fds.get(file, Descriptor, Rights.FD_WRITE)
    memory = ctx.memory
    write_u32(memory, nwritten, _write(ctx, descriptor, _gather(memory, iovs, iovs_len)))


@syscall(fd)
def fd_read(ctx: HostContext, file: i32, iovs: i32, iovs_len: i32, nread: i32) -> None:
    """Scatter-read into ``iovs_len`` buffers from ``file``."""
    descriptor = ctx.state.fds.get(file, Descriptor, Rights.FD_READ)
    memory = ctx.memory
    write_u32(memory, nread, _scatter(memory, iovs, iovs_len,
                                      lambda size: _read(ctx, descriptor, size)))


def _seekable(ctx: HostContext, file: int, rights: Rights) -> HostFile:
    """A file for positioned I/O: a stream is ESPIPE, a directory lacks the rights."""
    descriptor = ctx.state.fds.get(file, Descriptor)
    if isinstance(descriptor, Stream):
        raise WasiError(Errno.ESPIPE, f"fd {file} is a stream")
    descriptor.require(rights)
    if not isinstance(descriptor, HostFile):
        raise WasiError(Errno.EBADF, f"fd {file} is not a file")
    return descriptor


@syscall(fd)
def fd_pwrite(ctx: HostContext, file: i32, iovs: i32, iovs_len: i32, offset: i64,
              nwritten: i32) -> None:
    """Write at ``offset`` without moving the file position."""
    descriptor = _seekable(ctx, file, Rights.FD_WRITE | Rights.FD_SEEK)
    memory = ctx.memory
    data = _gather(memory, iovs, iovs_len)
    write_u32(memory, nwritten, os.pwrite(descriptor.fd, data, offset & U64))


@syscall(fd)
def fd_pread(ctx: HostContext, file: i32, iovs: i32, iovs_len: i32, offset: i64,
             nread: i32) -> None:
    """Read at ``offset`` without moving the file position."""
    descriptor = _seekable(ctx, file, Rights.FD_READ | Rights.FD_SEEK)
    memory = ctx.memory
    write_u32(memory, nread, _scatter(memory, iovs, iovs_len,
                                      lambda size: os.pread(descriptor.fd, size, offset & U64)))


@syscall(fd)
def fd_seek(ctx: HostContext, file: i32, offset: i64, whence: i32, newoffset: i32) -> None:
    """Move the file position; ``whence`` is SET (0), CUR (1) or END (2)."""
    if whence not in (Whence.SET, Whence.CUR, Whence.END):
        raise WasiError(Errno.EINVAL, f"whence {whence} is not SET, CUR or END")
    tell_only = whence == Whence.CUR and offset == 0
    descriptor = _seekable(ctx, file, Rights.FD_TELL if tell_only else Rights.FD_SEEK)
    host_whence = {Whence.SET: os.SEEK_SET, Whence.CUR: os.SEEK_CUR, Whence.END: os.SEEK_END}
    write_u64(ctx.memory, newoffset, os.lseek(descriptor.fd, offset, host_whence[Whence(whence)]))


@syscall(fd)
def fd_tell(ctx: HostContext, file: i32, offset: i32) -> None:
    """The current file position."""
    descriptor = _seekable(ctx, file, Rights.FD_TELL)
    write_u64(ctx.memory, offset, os.lseek(descriptor.fd, 0, os.SEEK_CUR))


@syscall(fd)
def fd_close(ctx: HostContext, file: i32) -> None:
    """Close ``file`` (preopens too: the guest may give them up)."""
    ctx.state.fds.close(file)


@syscall(fd)
def fd_renumber(ctx: HostContext, file: i32, to: i32) -> None:
    """Move ``file`` onto ``to``, closing what ``to`` held."""
    ctx.state.fds.renumber(file, to)


def _host(ctx: HostContext, file: int, rights: Rights) -> HostDescriptor | None:
    descriptor = ctx.state.fds.get(file, Descriptor, rights)
    return descriptor if isinstance(descriptor, HostDescriptor) else None


@syscall(fd)
def fd_sync(ctx: HostContext, file: i32) -> None:
    """Flush data and metadata of ``file`` to storage."""
    descriptor = _host(ctx, file, Rights.FD_SYNC)
    if descriptor is not None:
        os.fsync(descriptor.fd)


@syscall(fd)
def fd_datasync(ctx: HostContext, file: i32) -> None:
    """Flush the data of ``file`` to storage."""
    descriptor = _host(ctx, file, Rights.FD_DATASYNC)
    if descriptor is not None:
        os.fdatasync(descriptor.fd)


@syscall(fd)
def fd_advise(ctx: HostContext, file: i32, offset: i64, length: i64, advice: i32) -> None:
    """Pass an access-pattern hint for a byte range of ``file`` to the host."""
    if advice not in set(Advice):
        raise WasiError(Errno.EINVAL, f"unknown advice {advice}")
    descriptor = _seekable(ctx, file, Rights.FD_ADVISE)
    host_advice = [os.POSIX_FADV_NORMAL, os.POSIX_FADV_SEQUENTIAL, os.POSIX_FADV_RANDOM,
                   os.POSIX_FADV_WILLNEED, os.POSIX_FADV_DONTNEED, os.POSIX_FADV_NOREUSE]
    os.posix_fadvise(descriptor.fd, offset & U64, length & U64, host_advice[advice])


@syscall(fd)
def fd_allocate(ctx: HostContext, file: i32, offset: i64, length: i64) -> None:
    """Make sure ``file`` has storage for ``length`` bytes at ``offset``."""
    descriptor = _seekable(ctx, file, Rights.FD_ALLOCATE)
    os.posix_fallocate(descriptor.fd, offset & U64, length & U64)


@syscall(fd)
def fd_fdstat_get(ctx: HostContext, file: i32, buf: i32) -> None:
    """Write the ``fdstat`` of ``file``: type, flags and rights."""
    descriptor = ctx.state.fds.get(file, Descriptor)
    pack(ctx.memory, buf, "BxHxxxxQQ", descriptor.filetype, _fdflags(descriptor),
         descriptor.rights, descriptor.inheriting)


@syscall(fd)
def fd_fdstat_set_flags(ctx: HostContext, file: i32, flags: i32) -> None:
    """Set APPEND / NONBLOCK on ``file``; the sync flags cannot change after open (ENOTSUP)."""
    descriptor = ctx.state.fds.get(file, Descriptor, Rights.FD_FDSTAT_SET_FLAGS)
    wanted = FdFlags(flags & 0xFFFF)
    if wanted & ~_SETTABLE or (wanted and not isinstance(descriptor, HostFile)):
        raise WasiError(Errno.ENOTSUP, f"cannot set fdflags {wanted!r} on fd {file}")
    if isinstance(descriptor, HostFile):
        current = fcntl.fcntl(descriptor.fd, fcntl.F_GETFL)
        mask = os.O_APPEND | os.O_NONBLOCK
        fcntl.fcntl(descriptor.fd, fcntl.F_SETFL, (current & ~mask) | host_flags(wanted))


@syscall(fd)
def fd_fdstat_set_rights(ctx: HostContext, file: i32, rights: i64, inheriting: i64) -> None:
    """Drop rights from ``file``; rights can never be added back (ENOTCAPABLE)."""
    descriptor = ctx.state.fds.get(file, Descriptor)
    base, inherit = Rights(rights & U64), Rights(inheriting & U64)
    if base & ~descriptor.rights or inherit & ~descriptor.inheriting:
        raise WasiError(Errno.ENOTCAPABLE, f"fd {file} cannot gain rights")
    descriptor.rights, descriptor.inheriting = base, inherit


def _preopen_name(ctx: HostContext, file: int) -> bytes:
    descriptor = ctx.state.fds.get(file, Descriptor)
    if not isinstance(descriptor, Directory) or descriptor.preopen is None:
        raise WasiError(Errno.EBADF, f"fd {file} is not a preopened directory")
    return descriptor.preopen.encode()


@syscall(fd)
def fd_prestat_get(ctx: HostContext, file: i32, buf: i32) -> None:
    """Describe preopen ``file``: tag 0 (directory) and the length of its guest name."""
    pack(ctx.memory, buf, "BxxxI", 0, len(_preopen_name(ctx, file)))


@syscall(fd)
def fd_prestat_dir_name(ctx: HostContext, file: i32, path: i32, path_len: i32) -> None:
    """Copy the guest name of preopen ``file`` (not NUL-terminated) into ``path``."""
    name = _preopen_name(ctx, file)
    if path_len & 0xFFFFFFFF < len(name):
        raise WasiError(Errno.ENAMETOOLONG, f"{len(name)} bytes needed for the preopen name")
    write_bytes(ctx.memory, path, name)
