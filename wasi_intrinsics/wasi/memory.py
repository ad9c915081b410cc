"""Bounds-checked access to guest memory for WASI calls: out of bounds is EFAULT, not a crash.

Pointers and lengths arrive as wasmtime's signed ``i32``; they are read as the unsigned
32-bit values the guest meant.
"""

from __future__ import annotations

import struct

import numpy as np

from .errno import Errno, WasiError

_U32 = 0xFFFFFFFF
MAX_IOVECS = 1024
"""Buffers one read or write may name (Linux's ``IOV_MAX``); more is ``EINVAL``."""


class GuestFault(WasiError):
    """A guest pointer or length reaches outside linear memory (returned as EFAULT)."""

    def __init__(self, why: str):
        super().__init__(Errno.EFAULT, why)


def span(memory: np.ndarray, pointer: int, length: int) -> np.ndarray:
    """The ``length`` bytes at ``pointer``, as a zero-copy view.

    Raises:
        GuestFault: the span is not inside ``memory``.
    """
    pointer, length = pointer & _U32, length & _U32
    if pointer + length > memory.size:
        raise GuestFault(f"guest span [{pointer}, {pointer + length}) outside memory of "
                         f"{memory.size} bytes")
    return memory[pointer:pointer + length]


def read_u32s(memory: np.ndarray, pointer: int, count: int) -> np.ndarray:
    """``count`` little-endian u32 values at ``pointer``."""
    return span(memory, pointer, 4 * (count & _U32)).view("<u4")


def read_iovecs(memory: np.ndarray, iovs: int, iovs_len: int) -> list[np.ndarray]:
    """The buffers an ``iovec`` / ``ciovec`` array names, as views of ``memory``.

    Raises:
        WasiError: ``EINVAL`` for more than ``MAX_IOVECS`` buffers; ``GuestFault`` (EFAULT)
            for one outside memory.
    """
    if iovs_len & _U32 > MAX_IOVECS:
        raise WasiError(Errno.EINVAL, f"{iovs_len & _U32} buffers in one call; at most "
                                      f"{MAX_IOVECS}")
    vectors = read_u32s(memory, iovs, 2 * (iovs_len & _U32)).reshape(-1, 2)
    return [span(memory, int(pointer), int(length)) for pointer, length in vectors]


def pack(memory: np.ndarray, pointer: int, fmt: str, *values: int) -> None:
    """Write ``values`` at ``pointer`` in little-endian ``struct`` format ``fmt``."""
    struct.pack_into("<" + fmt, span(memory, pointer, struct.calcsize("<" + fmt)), 0, *values)


def unpack(memory: np.ndarray, pointer: int, fmt: str) -> tuple[int, ...]:
    """Read little-endian ``struct`` format ``fmt`` at ``pointer``."""
    return struct.unpack_from("<" + fmt, span(memory, pointer, struct.calcsize("<" + fmt)))


def write_u32(memory: np.ndarray, pointer: int, value: int) -> None:
    pack(memory, pointer, "I", value & _U32)


def write_u64(memory: np.ndarray, pointer: int, value: int) -> None:
    pack(memory, pointer, "Q", value & ((1 << 64) - 1))


def write_bytes(memory: np.ndarray, pointer: int, data: bytes) -> None:
    span(memory, pointer, len(data))[:] = np.frombuffer(data, np.uint8)


def read_string(memory: np.ndarray, pointer: int, length: int) -> str:
    """The UTF-8 string at ``pointer`` (paths, symlink targets).

    Raises:
        GuestFault: out of bounds.
        WasiError: ``EILSEQ`` when the bytes are not UTF-8.
    """
    try:
        return span(memory, pointer, length).tobytes().decode("utf-8")
    except UnicodeDecodeError:
        raise WasiError(Errno.EILSEQ, "path is not valid UTF-8") from None
