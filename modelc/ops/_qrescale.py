"""Shared checks and kernel arguments of the quantized int8 ops (``qadd``, ``qconcat``): a
real rescale factor becomes TFLite's fixed-point ``(multiplier, shift)`` pair, pushed as two
i32 constants (``wasm_kernels.fixed_point``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from wasm_kernels.fixed_point import quantize_multiplier

from ..errors import CompileError

if TYPE_CHECKING:
    from ..codegen import LowerContext

INT8 = "int8"


def require_int8(op: str, dtypes: list[str]) -> None:
    """Raises CompileError unless every operand is int8."""
    if any(d != INT8 for d in dtypes):
        raise CompileError(f"{op} expects int8 operands, got {dtypes}")


def require_scale(op: str, name: str, scale: float) -> None:
    """Raises CompileError unless ``scale`` is a finite positive number."""
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise CompileError(f"{op}: {name} must be a finite number > 0, got {scale!r}")


def push_rescale(ctx: LowerContext, real: float) -> None:
    """Push the (multiplier, shift) of the real factor ``real``."""
    multiplier, shift = quantize_multiplier(real)
    ctx.push(multiplier)
    ctx.push(shift)
