"""WASI ``random_get``: bytes from the host's CSPRNG."""

from __future__ import annotations

import os

import numpy as np

from ..intrinsic import HostContext, IntrinsicModule, i32
from .memory import span
from .syscall import syscall

random = IntrinsicModule("wasi_random")


@syscall(random)
def random_get(ctx: HostContext, buf: i32, buf_len: i32) -> None:
    """Fill ``buf_len`` bytes at ``buf`` with cryptographically secure random bytes."""
    out = span(ctx.memory, buf, buf_len)
    out[:] = np.frombuffer(os.urandom(out.size), np.uint8)
