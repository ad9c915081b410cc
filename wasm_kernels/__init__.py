"""The tensor-kernel library for WebAssembly SIMD128: ABI table, templates and builder."""

from . import abi
from .build import ISA_NAMES, build

__all__ = ["ISA_NAMES", "abi", "build"]
