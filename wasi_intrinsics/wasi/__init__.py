"""WASI preview1 as an intrinsic module, split by concern as WAVM does."""

from __future__ import annotations

from ..intrinsic import IntrinsicModule
from .fd import fd
from .proc import ProcExit, proc
from .state import WasiConfig, WasiState

MODULE = "wasi_snapshot_preview1"
LEGACY_MODULE = "wasi_unstable"


def preview1(name: str = MODULE) -> IntrinsicModule:
    """All WASI preview1 calls merged into one module called ``name``."""
    return IntrinsicModule.merged(name, fd, proc)


__all__ = ["LEGACY_MODULE", "MODULE", "ProcExit", "WasiConfig", "WasiState", "preview1"]
