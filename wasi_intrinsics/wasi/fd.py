"""WASI file-descriptor calls."""

from __future__ import annotations

from ..intrinsic import HostContext, IntrinsicModule, i32
from . import errno
from .memory import GuestFault, read_u32s, span, write_u32

fd = IntrinsicModule("wasi_fd")


@fd.function
def fd_write(ctx: HostContext, file: i32, iovs: i32, iovs_len: i32, nwritten: i32) -> i32:
    """Gather-write ``iovs_len`` (pointer, length) buffers to ``file``."""
    stream = ctx.state.streams.get(file)
    if stream is None:
        return errno.BADF
    memory = ctx.memory
    try:
        vectors = read_u32s(memory, iovs, 2 * iovs_len).reshape(-1, 2)
        total = 0
        for pointer, length in vectors:
            stream.write(span(memory, int(pointer), int(length)).tobytes())
            total += int(length)
        write_u32(memory, nwritten, total)
    except GuestFault:
        return errno.FAULT
    except OSError:
        return errno.IO
    return errno.SUCCESS
