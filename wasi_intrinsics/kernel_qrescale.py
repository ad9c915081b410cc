"""The host provider's qrescale family: int8 tensors moved between (scale, zero point) pairs
with TFLite's fixed-point arithmetic (``wasm_kernels.fixed_point``), as the wasm kernels do."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from wasm_kernels import abi
from wasm_kernels.fixed_point import ADD_LEFT_SHIFT, multiply_by_quantized_multiplier

from .intrinsic import HostContext
from .kernel_operands import operand, strided_operand

I8 = np.dtype("i1")


def _offset(values: np.ndarray, zero_point: int) -> np.ndarray:
    return values.astype(np.int32) - np.int32(zero_point)


def _qadd(ctx: HostContext, a: int, b: int, y: int, n: int, a_zp: int, a_mult: int,
          a_shift: int, b_zp: int, b_mult: int, b_shift: int, y_zp: int, y_mult: int,
          y_shift: int, lo: int, hi: int) -> None:
    first, second = (multiply_by_quantized_multiplier(
        _offset(operand(ctx.memory, p, (n,), I8), zp) << ADD_LEFT_SHIFT, mult, shift)
        for p, zp, mult, shift in ((a, a_zp, a_mult, a_shift), (b, b_zp, b_mult, b_shift)))
    total = first + second
    out = multiply_by_quantized_multiplier(total, y_mult, y_shift) + np.int32(y_zp)
    operand(ctx.memory, y, (n,), I8)[...] = np.clip(out, lo, hi)


def _rows(ctx: HostContext, y: int, rows: int, n: int, y_stride: int) -> np.ndarray:
    return strided_operand(ctx, y, (rows, n), (y_stride, 1), I8, writeable=True)


def _rescale_rows(ctx: HostContext, x: int, y: int, rows: int, n: int, y_stride: int,
                  x_zp: int, mult: int, shift: int, y_zp: int, lo: int, hi: int) -> None:
    values = _offset(operand(ctx.memory, x, (rows, n), I8), x_zp)
    out = multiply_by_quantized_multiplier(values, mult, shift) + np.int32(y_zp)
    _rows(ctx, y, rows, n, y_stride)[...] = np.clip(out, lo, hi)


def _copy_rows(ctx: HostContext, x: int, y: int, rows: int, n: int, y_stride: int) -> None:
    _rows(ctx, y, rows, n, y_stride)[...] = operand(ctx.memory, x, (rows, n), I8)


OPS: dict[str, Callable[..., None]] = {"qadd": _qadd, "rescale_rows": _rescale_rows,
                                       "copy_rows": _copy_rows}


def qrescale(spec: abi.KernelSpec) -> Callable[..., None]:
    """The host function of qrescale row ``spec``."""
    return OPS[spec.op]
