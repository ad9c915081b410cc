"""Bounds-checked access to guest memory for WASI calls: out of bounds is EFAULT, not a crash."""

from __future__ import annotations

import numpy as np


class GuestFault(Exception):
    """A guest pointer or length reaches outside linear memory (returned as EFAULT)."""


def span(memory: np.ndarray, pointer: int, length: int) -> np.ndarray:
    """The ``length`` bytes at ``pointer``, as a zero-copy view.

    Raises:
        GuestFault: the span is not inside ``memory``.
    """
    if pointer < 0 or length < 0 or pointer + length > memory.size:
        raise GuestFault(f"guest span [{pointer}, {pointer + length}) outside memory of "
                         f"{memory.size} bytes")
    return memory[pointer:pointer + length]


def read_u32s(memory: np.ndarray, pointer: int, count: int) -> np.ndarray:
    """``count`` little-endian u32 values at ``pointer``."""
    return span(memory, pointer, 4 * count).view("<u4")


def write_u32(memory: np.ndarray, pointer: int, value: int) -> None:
    span(memory, pointer, 4).view("<u4")[0] = value
