"""The tensor-kernel library for WebAssembly SIMD128: ABI table, templates and builder."""

from . import abi
from .build import ISAS, build

__all__ = ["ISAS", "abi", "build"]
