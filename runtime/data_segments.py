"""A model's large data segments (its embedded weights), kept out of the compiled module.

wasmtime keeps every active data segment inside the compiled module and copies it into
linear memory when it instantiates it, so embedded weights were resident three times while a
model loaded: the file's bytes in Python, the compiled module's image (mapped from the code
cache) and the instance's memory. ``split`` reads the module with its large segments left
empty, remembering only where their bytes are in the file (or in the bytes given), and
``Segments.write`` copies them straight from there into each new instance's memory, as
instantiation would have: the weights are resident once, in linear memory.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from wasm_kernels.wasm.encode import sleb, uleb

from .errors import ModelFormatError

LARGE = 1 << 16
"""Segments of at least this many bytes are written by ``Segments.write``."""
_DATA = 11
_I32_CONST, _END = 0x41, 0x0B


@dataclass(frozen=True)
class Segment:
    """``size`` bytes at ``start`` in the source go to ``address`` in linear memory."""

    address: int
    start: int
    size: int


def _leb(source: BinaryIO, signed: bool = False) -> int:
    result = shift = 0
    while True:
        byte = source.read(1)
        if not byte:
            raise ModelFormatError("the model file is truncated (inside a LEB128 number)")
        result |= (byte[0] & 0x7F) << shift
        shift += 7
        if not byte[0] & 0x80:
            if signed and byte[0] & 0x40:
                result -= 1 << shift
            return result
        if shift > 63:
            raise ModelFormatError("the model file has a LEB128 number that is too long")


def _exactly(source: BinaryIO, size: int) -> bytes:
    here = source.tell()
    if size > source.seek(0, io.SEEK_END) - here:  # NOTE: before read() allocates size bytes
        raise ModelFormatError(f"the model file is truncated (wanted {size} bytes)")
    source.seek(here)
    data = source.read(size)
    if len(data) != size:
        raise ModelFormatError(f"the model file is truncated (wanted {size} bytes, got "
                               f"{len(data)})")
    return data


def _split_data(source: BinaryIO, end: int) -> tuple[bytes, list[Segment]] | None:
    """The data section (from the source's position up to ``end``) with its large active
    segments left empty, and those; None when a segment is not a plain ``i32.const`` active
    one."""
    kept: list[bytes] = []
    large: list[Segment] = []
    for _ in range(_leb(source)):
        if _leb(source) != 0 or _exactly(source, 1)[0] != _I32_CONST:
            return None
        address = _leb(source, signed=True) & 0xFFFFFFFF
        if _exactly(source, 1)[0] != _END:
            return None
        size = _leb(source)
        head = b"\x00" + bytes([_I32_CONST]) + sleb(address) + bytes([_END])
        if size >= LARGE:
            # NOTE: left empty, not removed: segment indices (and the data count) stay; an
            # active segment is dropped once applied, so nothing can read it afterwards.
            large.append(Segment(address, source.tell(), size))
            source.seek(size, io.SEEK_CUR)
            kept.append(head + uleb(0))
        else:
            kept.append(head + uleb(size) + _exactly(source, size))
    if source.tell() != end:
        raise ModelFormatError("the model file's data section does not end where it says")
    return uleb(len(kept)) + b"".join(kept), large


def _split(source: BinaryIO) -> tuple[bytes, list[Segment]]:
    out = bytearray(_exactly(source, 8))
    large: list[Segment] = []
    while header := source.read(1):
        size = _leb(source)
        start = source.tell()
        split = _split_data(source, start + size) if header[0] == _DATA else None
        if split is None:
            source.seek(start)
            body = _exactly(source, size)
        else:
            body, large = split
        out += header + uleb(len(body)) + body
    return bytes(out), large


class Segments:
    """The large data segments of a model and where their bytes are."""

    def __init__(self, source: bytes | Path, segments: list[Segment]):
        self.segments = segments
        self._bytes = source if isinstance(source, bytes) else None
        self._fd: int | None = None
        if isinstance(source, Path):
            self._path = source
            self._fd = os.open(source, os.O_RDONLY)
            self._stat = os.fstat(self._fd)

    @property
    def nbytes(self) -> int:
        return sum(s.size for s in self.segments)

    def write(self, memory: np.ndarray) -> None:
        """Copy every segment into ``memory`` (a ``uint8`` view of linear memory).

        Raises:
            ModelFormatError: a segment lies outside the memory, or the model file changed
                since it was loaded.
        """
        if self._fd is not None:
            now = os.fstat(self._fd)
            if (now.st_size, now.st_mtime_ns) != (self._stat.st_size, self._stat.st_mtime_ns):
                raise ModelFormatError(f"the model file {str(self._path)!r} changed since it "
                                       "was loaded; load it again")
        for segment in self.segments:
            end = segment.address + segment.size
            if end > len(memory):
                raise ModelFormatError(f"a data segment spans bytes [{segment.address}, {end}) "
                                       f"but the model's memory has {len(memory)} bytes")
            target = memory[segment.address:end]
            if self._bytes is not None:
                target[:] = np.frombuffer(self._bytes, np.uint8, segment.size, segment.start)
                continue
            assert self._fd is not None
            done = 0
            while done < segment.size:
                got = os.preadv(self._fd, [target[done:].data], segment.start + done)
                if got <= 0:
                    raise ModelFormatError(f"the model file {str(self._path)!r} is shorter "
                                           "than when it was loaded")
                done += got

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


MAGIC = b"\0asm\x01\0\0\0"


def split(source: bytes | Path) -> tuple[bytes, Segments]:
    """The module in ``source`` (its bytes, or its file, read once) with its large active
    data segments left empty, and those segments. Bytes that do not parse as a module are
    returned whole (with no segments) for the compiler to report."""
    with (io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")) as file:
        try:
            if file.read(8) == MAGIC:
                file.seek(0)
                module, large = _split(file)
                return module, Segments(source, large)
        except ModelFormatError:
            pass
        file.seek(0)
        return file.read(), Segments(b"", [])
