"""The integer family: y = a <op> b for int32, int64 and the narrow integers (add, sub, mul
wrapping as numpy does, a narrow integer computed in i32 and stored by its low bits;
maximum, minimum) with numpy broadcasting over a rank-4 output, one element at a time for
every ISA (integer tensors are indices, positions and pixels, small and computed once per
run)."""

from __future__ import annotations

from collections.abc import Callable

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .cast import ACCESS
from .compare import scalar_broadcast

SELECTS = {"maximum": "gt_s", "minimum": "lt_s"}
"""The ops that pick an operand: the comparison that picks ``a`` (narrow integers are
sign- or zero-extended, so a signed compare orders them)."""


def _select(value: str, compare: str) -> Callable[[Code], None]:
    """``a, b -> a if a <compare> b else b``."""
    def emit(c: Code) -> None:
        a, b = c.local(value), c.local(value)
        c.emit("local.set", b).emit("local.tee", a).emit("local.get", b)
        c.emit("local.get", a).emit("local.get", b).emit(f"{value}.{compare}").emit("select")
    return emit


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate integer kernel ``spec`` (``<t>_<op>``); the same code for every ISA."""
    value, _, store, log2_size = ACCESS[spec.dtypes[0]]
    op = _select(value, SELECTS[spec.op]) if spec.op in SELECTS else f"{value}.{spec.op}"
    return scalar_broadcast(spec, op, (store, log2_size))
