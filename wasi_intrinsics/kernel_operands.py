"""Checked views of a host kernel's operands in linear memory: an operand outside memory is
the trap the wasm kernel gives for it (``out_of_bounds``), and a view whose elements would
exceed the memory cap is refused before anything is computed from it."""

from __future__ import annotations

import math

import numpy as np

from .intrinsic import HostContext
from .kernel_limits import OperandFault, check_bytes

F32 = np.dtype("<f4")


def operand(memory: np.ndarray, pointer: int, shape: tuple[int, ...],
            dtype: np.dtype = F32) -> np.ndarray:
    """The dense ``shape`` of ``dtype`` at byte ``pointer`` of ``memory``, as a view."""
    nbytes = math.prod(shape) * dtype.itemsize
    if pointer < 0 or min(shape, default=0) < 0 or pointer + nbytes > memory.size:
        raise OperandFault("out_of_bounds", f"kernel operand [{pointer}, {pointer + nbytes}) "
                                            f"is outside linear memory of {memory.size} bytes")
    return memory[pointer:pointer + nbytes].view(dtype).reshape(shape)


def element_dtype(dtype: str) -> np.dtype:
    """How an ABI element dtype lies in memory: little-endian, and a bool as its raw byte
    (any nonzero byte is true, as numpy reads one)."""
    return np.dtype("u1" if dtype == "bool" else dtype).newbyteorder("<")


def strided_operand(ctx: HostContext, pointer: int, dims: tuple[int, ...],
             strides: tuple[int, ...], dtype: np.dtype = F32,
             writeable: bool = False) -> np.ndarray:
    """A view of elements at ``pointer`` with element ``strides`` (0 broadcasts, negative
    ones run backwards from ``pointer``). Its elements are checked against the memory cap:
    a broadcast view is small, but what is computed from it has all of them."""
    if min(dims, default=0) < 0:
        raise OperandFault("out_of_bounds", f"kernel operand with negative dims {dims}")
    check_bytes(ctx, math.prod(dims) * dtype.itemsize, f"an operand of dims {dims}")
    memory = ctx.memory
    if not all(dims):
        return np.empty(dims, dtype)
    low = sum((d - 1) * s for d, s in zip(dims, strides) if s < 0)
    high = sum((d - 1) * s for d, s in zip(dims, strides) if s > 0)
    span = operand(memory, pointer + low * dtype.itemsize, (high - low + 1,), dtype)
    return np.lib.stride_tricks.as_strided(span[-low:], dims,
                                           tuple(dtype.itemsize * s for s in strides),
                                           writeable=writeable)
