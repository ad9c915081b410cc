"""ONNX BitShift (opsets 11 and 28: unsigned, then signed integers) by shift amounts known at
import: a left shift is a wrapping multiply by ``2**shift``, a right shift a floor division
by it (exact, ``int_division``; arithmetic for signed values). A shift outside ``[0,
width)`` gives 0, or -1 for a right shift of a negative value, as the ONNX reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from .fold import is_known
from .int_division import truncated
from .node import OnnxNode


def _reference(x: np.ndarray, shift: np.ndarray, left: bool) -> np.ndarray:
    x, shift = np.broadcast_arrays(x, shift.astype(np.int64))
    width = x.dtype.itemsize * 8
    valid = (shift >= 0) & (shift < width)
    amount = np.where(valid, shift, 0)
    unsigned = x.view(f"u{x.dtype.itemsize}")
    if left:
        moved = np.left_shift(unsigned, amount.astype(unsigned.dtype)).view(x.dtype)
        return np.where(valid, moved, 0).astype(x.dtype)
    moved = np.right_shift(x, amount.astype(x.dtype))
    return np.where(valid, moved, np.where(x < 0, -1, 0)).astype(x.dtype)


def bit_shift(n: OnnxNode) -> Any:
    """BitShift: ``direction`` LEFT or RIGHT; the shift amounts (input 1) must be known."""
    x = n.input(0)
    dtype = np.dtype(str(x.dtype))
    if dtype.kind not in "iu" or dtype.kind == "u" and dtype.itemsize > 2:
        raise n.error(f"shifts signed integers and unsigned ones up to 16 bits, got {dtype}")
    shift = n.known(1, "shift amount").astype(np.int64)
    left = n.attr("direction") == "LEFT"
    if is_known(x):
        return _reference(x, shift, left)
    width = dtype.itemsize * 8
    if left:
        # NOTE: 2**(width - 1) wraps to the most negative value: the multiply still wraps right
        factor = _reference(np.ones(shift.shape, dtype), shift, True)
        return F.mul(x, factor)
    signed = dtype.kind == "i"
    # NOTE: 2**(width - 1) does not fit a signed type; x >> (width - 1) is its sign anyway
    valid = (shift >= 0) & (shift < (width - 1 if signed else width))
    divisor = np.where(valid, np.left_shift(1, np.where(valid, shift, 0)), 1).astype(dtype)
    quotient, remainder = truncated(x, divisor)
    if signed:  # floor, not truncation: one lower where a negative value leaves a remainder
        quotient = F.where(F.lt(remainder, 0), F.sub(quotient, np.array(1, dtype)), quotient)
    if valid.all():
        return quotient
    outside = (F.where(F.lt(x, 0), np.array(-1, dtype), np.array(0, dtype)) if signed
               else np.array(0, dtype))
    return F.where(valid, quotient, outside)


OPS = {"BitShift": bit_shift}
