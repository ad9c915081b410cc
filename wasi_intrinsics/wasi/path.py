"""WASI ``path_*`` calls: open, create, remove, rename and link entries below a directory fd.

Every path goes through ``sandbox.resolve``; see there for why nothing outside the directory
fd can be reached.
"""

from __future__ import annotations

import os
import stat
from contextlib import AbstractContextManager

from ..intrinsic import HostContext, IntrinsicModule, i32, i64
from .abi import (
    DIRECTORY_RIGHTS,
    FILE_RIGHTS,
    U64,
    FdFlags,
    Filetype,
    LookupFlags,
    OFlags,
    Rights,
)
from .descriptors import Directory, HostFile, filetype
from .errno import Errno, WasiError
from .fd import host_flags
from .memory import read_string, write_bytes, write_u32
from .sandbox import Resolved, check_path, resolve
from .syscall import syscall

path = IntrinsicModule("wasi_path")

# Rights that need the host file opened for writing.
_WRITING = Rights.FD_WRITE | Rights.FD_DATASYNC | Rights.FD_ALLOCATE | Rights.FD_FILESTAT_SET_SIZE
_READING = Rights.FD_READ | Rights.FD_READDIR


def at(ctx: HostContext, file: int, rights: Rights, pointer: int, length: int,
       follow: bool = False) -> AbstractContextManager[Resolved]:
    """Resolve the guest path at ``pointer`` below directory fd ``file``, which needs ``rights``.

    Raises:
        WasiError: see ``FdTable.get`` and ``sandbox.resolve``.
    """
    directory = ctx.state.fds.get(file, Directory, rights)
    return resolve(directory.fd, read_string(ctx.memory, pointer, length), follow)


def _open_flags(oflags: OFlags, rights: Rights) -> int:
    write = bool(rights & _WRITING or oflags & OFlags.TRUNC)
    read = bool(rights & _READING or not write)
    flags = os.O_RDWR if read and write else os.O_WRONLY if write else os.O_RDONLY
    for wasi_flag, host_flag in ((OFlags.CREAT, os.O_CREAT), (OFlags.EXCL, os.O_EXCL),
                                 (OFlags.TRUNC, os.O_TRUNC), (OFlags.DIRECTORY, os.O_DIRECTORY)):
        if oflags & wasi_flag:
            flags |= host_flag
    return flags | os.O_NOFOLLOW | os.O_CLOEXEC


@syscall(path)
def path_open(ctx: HostContext, file: i32, dirflags: i32, path_ptr: i32, path_len: i32,
              oflags: i32, rights_base: i64, rights_inheriting: i64, fdflags: i32,
              opened: i32) -> None:
    """Open ``path`` below directory ``file``; the new fd gets the requested rights, which must
    be among the directory's inheriting rights."""
    directory = ctx.state.fds.get(file, Directory, Rights.PATH_OPEN)
    flags = OFlags(oflags & 0xF)
    directory.require(Rights.PATH_OPEN
                      | (Rights.PATH_CREATE_FILE if flags & OFlags.CREAT else Rights(0))
                      | (Rights.PATH_FILESTAT_SET_SIZE if flags & OFlags.TRUNC else Rights(0)))
    base, inheriting = Rights(rights_base & U64), Rights(rights_inheriting & U64)
    beyond = (base | inheriting) & ~directory.inheriting
    if beyond:
        raise WasiError(Errno.ENOTCAPABLE, f"rights {beyond!r} not granted to fd {file}")
    host = _open_flags(flags, base) | host_flags(FdFlags(fdflags & 0xFFFF))
    follow = bool(dirflags & LookupFlags.SYMLINK_FOLLOW)
    with at(ctx, file, Rights.PATH_OPEN, path_ptr, path_len, follow) as where:
        if where.trailing_slash:
            host |= os.O_DIRECTORY
        # NOTE: non-blocking, so opening a FIFO nobody writes cannot hang the host; reads
        # and writes then wait (until the deadline) as the guest's flags say.
        new = os.open(where.name, host | os.O_NONBLOCK, 0o666, dir_fd=where.parent)
    if not host & os.O_NONBLOCK:
        os.set_blocking(new, True)
    mode = os.fstat(new).st_mode
    if stat.S_ISDIR(mode):
        descriptor: Directory | HostFile = Directory(Filetype.DIRECTORY, base & DIRECTORY_RIGHTS,
                                                     inheriting, new)
    else:
        descriptor = HostFile(filetype(mode), base & FILE_RIGHTS, inheriting, new)
    write_u32(ctx.memory, opened, ctx.state.fds.add(descriptor))


@syscall(path)
def path_create_directory(ctx: HostContext, file: i32, path_ptr: i32, path_len: i32) -> None:
    """Create directory ``path``."""
    with at(ctx, file, Rights.PATH_CREATE_DIRECTORY, path_ptr, path_len) as where:
        os.mkdir(where.name, 0o777, dir_fd=where.parent)


@syscall(path)
def path_remove_directory(ctx: HostContext, file: i32, path_ptr: i32, path_len: i32) -> None:
    """Remove the empty directory ``path``."""
    with at(ctx, file, Rights.PATH_REMOVE_DIRECTORY, path_ptr, path_len) as where:
        os.rmdir(where.name, dir_fd=where.parent)


@syscall(path)
def path_unlink_file(ctx: HostContext, file: i32, path_ptr: i32, path_len: i32) -> None:
    """Remove the non-directory ``path`` (a symlink itself, never its target)."""
    with at(ctx, file, Rights.PATH_UNLINK_FILE, path_ptr, path_len) as where:
        os.unlink(where.name, dir_fd=where.parent)


def _is_directory(where: Resolved) -> bool:
    return stat.S_ISDIR(os.stat(where.name, dir_fd=where.parent, follow_symlinks=False).st_mode)


@syscall(path)
def path_rename(ctx: HostContext, file: i32, old_ptr: i32, old_len: i32, new_file: i32,
                new_ptr: i32, new_len: i32) -> None:
    """Rename ``old`` below ``file`` to ``new`` below ``new_file``."""
    with at(ctx, file, Rights.PATH_RENAME_SOURCE, old_ptr, old_len) as old, \
            at(ctx, new_file, Rights.PATH_RENAME_TARGET, new_ptr, new_len) as new:
        if (old.trailing_slash or new.trailing_slash) and not _is_directory(old):
            raise WasiError(Errno.ENOTDIR, "a path with a trailing '/' names a non-directory")
        os.rename(old.name, new.name, src_dir_fd=old.parent, dst_dir_fd=new.parent)


@syscall(path)
def path_link(ctx: HostContext, file: i32, flags: i32, old_ptr: i32, old_len: i32,
              new_file: i32, new_ptr: i32, new_len: i32) -> None:
    """Create hard link ``new`` to ``old``."""
    follow = bool(flags & LookupFlags.SYMLINK_FOLLOW)
    with at(ctx, file, Rights.PATH_LINK_SOURCE, old_ptr, old_len, follow) as old, \
            at(ctx, new_file, Rights.PATH_LINK_TARGET, new_ptr, new_len) as new:
        if new.trailing_slash:
            raise WasiError(Errno.ENOENT, "a hard link's name cannot end in '/'")
        os.link(old.name, new.name, src_dir_fd=old.parent, dst_dir_fd=new.parent,
                follow_symlinks=False)


@syscall(path)
def path_symlink(ctx: HostContext, old_ptr: i32, old_len: i32, file: i32, new_ptr: i32,
                 new_len: i32) -> None:
    """Create symlink ``new`` whose content is ``old``; absolute targets are refused, since
    the sandbox would never follow them."""
    target = read_string(ctx.memory, old_ptr, old_len)
    check_path(target)
    with at(ctx, file, Rights.PATH_SYMLINK, new_ptr, new_len) as where:
        if where.trailing_slash:
            raise WasiError(Errno.ENOENT, "a symlink's name cannot end in '/'")
        os.symlink(target, where.name, dir_fd=where.parent)


@syscall(path)
def path_readlink(ctx: HostContext, file: i32, path_ptr: i32, path_len: i32, buf: i32,
                  buf_len: i32, bufused: i32) -> None:
    """Copy the content of symlink ``path`` into ``buf``, cut to ``buf_len`` bytes."""
    with at(ctx, file, Rights.PATH_READLINK, path_ptr, path_len) as where:
        content = os.fsencode(os.readlink(where.name, dir_fd=where.parent))
    content = content[:buf_len & 0xFFFFFFFF]
    memory = ctx.memory
    write_bytes(memory, buf, content)
    write_u32(memory, bufused, len(content))
