"""The tensor-kernel library for WebAssembly SIMD128: ABI table, templates and builder."""

from . import abi
from .build import ISA_NAMES, MAX_PAGES, MEMORY, OPT_LEVELS, build, opt_level

__all__ = ["ISA_NAMES", "MAX_PAGES", "MEMORY", "OPT_LEVELS", "abi", "build", "opt_level"]
