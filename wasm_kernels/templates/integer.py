"""The integer family: y = a <op> b for int32, int64 and the narrow integers (add, sub, mul,
wrapping as numpy does: a narrow integer computes in i32 and stores its low bits) with numpy
broadcasting over a rank-4 output, one element at a time for every ISA (integer tensors are
indices, positions and pixels, small and computed once per run)."""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .cast import ACCESS
from .compare import scalar_broadcast


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate integer kernel ``spec`` (``<t>_<op>``); the same code for every ISA."""
    value, _, store, log2_size = ACCESS[spec.dtypes[0]]
    return scalar_broadcast(spec, f"{value}.{spec.op}", (store, log2_size))
