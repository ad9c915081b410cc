"""WASI preview1 as an intrinsic module, split by concern as WAVM does.

Deny by default: a program sees only the arguments, environment, streams and preopened
directories in its ``WasiConfig``. Failures are errno values returned to the guest; only
``proc_exit`` unwinds (as ``ProcExit``).

``LEGACY_MODULE`` (``wasi_unstable``) is served by the same functions: the few calls whose
layouts changed in preview1 (``fd_seek``'s whence numbering, ``filestat``'s ``nlink`` width,
``poll_oneoff``'s clock subscription) follow preview1.
"""

from __future__ import annotations

from ..intrinsic import IntrinsicModule
from .args_env import args_env
from .clocks import clocks
from .fd import fd
from .filestat import filestat
from .path import path
from .poll import poll
from .proc import ProcExit, proc
from .random import random
from .readdir import readdir
from .sock import sock
from .state import CappedBuffer, Preopen, WasiConfig, WasiState

MODULE = "wasi_snapshot_preview1"
LEGACY_MODULE = "wasi_unstable"


def preview1(name: str = MODULE) -> IntrinsicModule:
    """All WASI preview1 calls merged into one module called ``name``."""
    return IntrinsicModule.merged(name, args_env, clocks, fd, filestat, path, poll, proc,
                                  random, readdir, sock)


__all__ = ["LEGACY_MODULE", "MODULE", "CappedBuffer", "Preopen", "ProcExit", "WasiConfig",
           "WasiState", "preview1"]
