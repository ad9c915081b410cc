"""WASI ``fd_readdir``: directory entries as ``dirent`` records, resumable by cookie."""

from __future__ import annotations

import os
import struct

import numpy as np

from ..intrinsic import HostContext, IntrinsicModule, i32, i64
from .abi import U64, Filetype, Rights
from .descriptors import Directory
from .memory import span, write_u32
from .syscall import syscall

readdir = IntrinsicModule("wasi_readdir")

_DIRENT = struct.Struct("<QQIB3x")  # d_next, d_ino, d_namlen, d_type


def _entries(directory: Directory) -> list[tuple[str, int, Filetype]]:
    """``.``, ``..`` and the entries sorted by name, so cookies (indices) stay stable."""
    # NOTE: ``..`` reports this directory's own inode: at a preopen's root the real parent
    # is outside the sandbox and the guest learns nothing about it.
    own = os.fstat(directory.fd).st_ino
    out = [(".", own, Filetype.DIRECTORY), ("..", own, Filetype.DIRECTORY)]
    with os.scandir(directory.fd) as listing:
        for entry in sorted(listing, key=lambda e: e.name):
            kind = (Filetype.SYMBOLIC_LINK if entry.is_symlink()
                    else Filetype.DIRECTORY if entry.is_dir(follow_symlinks=False)
                    else Filetype.REGULAR_FILE if entry.is_file(follow_symlinks=False)
                    else Filetype.UNKNOWN)
            out.append((entry.name, entry.inode(), kind))
    return out


@syscall(readdir)
def fd_readdir(ctx: HostContext, file: i32, buf: i32, buf_len: i32, cookie: i64,
               bufused: i32) -> None:
    """Fill ``buf`` with entries from position ``cookie``; the last one may be cut short, and
    ``bufused < buf_len`` tells the guest it has reached the end."""
    directory = ctx.state.fds.get(file, Directory, Rights.FD_READDIR)
    memory = ctx.memory
    out = span(memory, buf, buf_len)
    records = bytearray()
    for index, (name, inode, kind) in enumerate(_entries(directory)[cookie & U64:]):
        encoded = name.encode()
        records += _DIRENT.pack((cookie & U64) + index + 1, inode, len(encoded), kind)
        records += encoded
        if len(records) >= out.size:
            break
    used = min(len(records), out.size)
    out[:used] = np.frombuffer(records, np.uint8)[:used]
    write_u32(memory, bufused, used)
