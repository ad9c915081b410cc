"""The integer family: y = a <op> b for int32 and int64 (add, sub, mul, wrapping as numpy
does) with numpy broadcasting over a rank-4 output, one element at a time for every ISA
(integer tensors are indices and positions, small and computed once per run)."""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .compare import LOADS, scalar_broadcast


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate integer kernel ``spec`` (``<t>_<op>``); the same code for every ISA."""
    value, _, log2_size = LOADS[spec.dtypes[0]]
    return scalar_broadcast(spec, f"{value}.{spec.op}", (f"{value}.store", log2_size))
