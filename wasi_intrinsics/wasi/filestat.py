"""WASI ``filestat`` calls: metadata of an fd or a path, sizes and timestamps."""

from __future__ import annotations

import os
import time

import numpy as np

from ..intrinsic import HostContext, IntrinsicModule, i32, i64
from .abi import U64, FstFlags, LookupFlags, Rights
from .descriptors import Descriptor, HostDescriptor, HostFile, filetype
from .errno import Errno, WasiError
from .memory import pack
from .path import at
from .syscall import syscall

filestat = IntrinsicModule("wasi_filestat")


def _pack_filestat(memory: np.ndarray, buf: int, st: os.stat_result) -> None:
    pack(memory, buf, "QQBxxxxxxxQQQQQ", st.st_dev, st.st_ino, filetype(st.st_mode),
         st.st_nlink, st.st_size, st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)


def _times(current: os.stat_result, atim: int, mtim: int, flags: int) -> tuple[int, int]:
    """New (atime, mtime) in ns from ``fstflags``: a given time, now, or unchanged."""
    fst = FstFlags(flags & 0xFFFF)
    if flags & ~0xF or (fst & FstFlags.ATIM and fst & FstFlags.ATIM_NOW) or (
            fst & FstFlags.MTIM and fst & FstFlags.MTIM_NOW):
        raise WasiError(Errno.EINVAL, f"invalid fstflags {flags:#x}")
    now = time.time_ns()
    atime = (atim & U64 if fst & FstFlags.ATIM else now if fst & FstFlags.ATIM_NOW
             else current.st_atime_ns)
    mtime = (mtim & U64 if fst & FstFlags.MTIM else now if fst & FstFlags.MTIM_NOW
             else current.st_mtime_ns)
    return atime, mtime


@syscall(filestat)
def fd_filestat_get(ctx: HostContext, file: i32, buf: i32) -> None:
    """Write the ``filestat`` of ``file`` (zeros but the type for host streams)."""
    descriptor = ctx.state.fds.get(file, Descriptor, Rights.FD_FILESTAT_GET)
    if isinstance(descriptor, HostDescriptor):
        _pack_filestat(ctx.memory, buf, os.fstat(descriptor.fd))
    else:
        pack(ctx.memory, buf, "QQBxxxxxxxQQQQQ", 0, 0, descriptor.filetype, 0, 0, 0, 0, 0)


@syscall(filestat)
def fd_filestat_set_size(ctx: HostContext, file: i32, size: i64) -> None:
    """Truncate or extend ``file`` to ``size`` bytes."""
    descriptor = ctx.state.fds.get(file, HostFile, Rights.FD_FILESTAT_SET_SIZE)
    os.ftruncate(descriptor.fd, size & U64)


@syscall(filestat)
def fd_filestat_set_times(ctx: HostContext, file: i32, atim: i64, mtim: i64,
                          fst_flags: i32) -> None:
    """Set the access and modification times of ``file``."""
    descriptor = ctx.state.fds.get(file, HostDescriptor, Rights.FD_FILESTAT_SET_TIMES)
    os.utime(descriptor.fd, ns=_times(os.fstat(descriptor.fd), atim, mtim, fst_flags))


@syscall(filestat)
def path_filestat_get(ctx: HostContext, file: i32, flags: i32, path: i32, path_len: i32,
                      buf: i32) -> None:
    """Write the ``filestat`` of ``path`` (of the link itself unless SYMLINK_FOLLOW)."""
    follow = bool(flags & LookupFlags.SYMLINK_FOLLOW)
    with at(ctx, file, Rights.PATH_FILESTAT_GET, path, path_len, follow) as where:
        st = os.stat(where.name, dir_fd=where.parent, follow_symlinks=False)
    _pack_filestat(ctx.memory, buf, st)


@syscall(filestat)
def path_filestat_set_times(ctx: HostContext, file: i32, flags: i32, path: i32, path_len: i32,
                            atim: i64, mtim: i64, fst_flags: i32) -> None:
    """Set the access and modification times of ``path``."""
    follow = bool(flags & LookupFlags.SYMLINK_FOLLOW)
    with at(ctx, file, Rights.PATH_FILESTAT_SET_TIMES, path, path_len, follow) as where:
        current = os.stat(where.name, dir_fd=where.parent, follow_symlinks=False)
        os.utime(where.name, ns=_times(current, atim, mtim, fst_flags), dir_fd=where.parent,
                 follow_symlinks=False)
