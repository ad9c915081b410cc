"""WASI ``random_get``: bytes from the host's CSPRNG."""

from __future__ import annotations

import os

import numpy as np

from ..intrinsic import HostContext, IntrinsicModule, i32
from .deadline import check
from .memory import span
from .syscall import syscall

random = IntrinsicModule("wasi_random")
_CHUNK = 1 << 20  # bytes filled between deadline checks


@syscall(random)
def random_get(ctx: HostContext, buf: i32, buf_len: i32) -> None:
    """Fill ``buf_len`` bytes at ``buf`` with cryptographically secure random bytes."""
    out = span(ctx.memory, buf, buf_len)
    for start in range(0, out.size, _CHUNK):
        check(ctx, "random_get")
        piece = out[start:start + _CHUNK]
        piece[:] = np.frombuffer(os.urandom(piece.size), np.uint8)
