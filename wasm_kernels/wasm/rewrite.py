"""Rewrites of a finished module's binary that need no full decode."""

from __future__ import annotations

from .builder import _limits
from .decode import WasmFormatError, _Reader
from .encode import uleb
from .types import Limits

_MAGIC = b"\0asm\x01\0\0\0"


def share_memory_import(wasm: bytes, module: str, field_name: str, max_pages: int) -> bytes:
    """``wasm`` with its memory import ``module.field_name`` declared ``shared`` with a
    maximum of ``max_pages`` (its minimum kept), so that a shared memory can satisfy it:
    the threads proposal matches imports only against memories of the same sharedness.

    Raises:
        WasmFormatError: ``wasm`` is malformed, or imports no memory ``module.field_name``.
    """
    if wasm[:8] != _MAGIC:
        raise WasmFormatError("not a WebAssembly 1.0 module (bad magic or version)")
    reader = _Reader(wasm)
    reader.pos = 8
    while reader.pos < len(wasm):
        start = reader.pos
        sid = reader.byte()
        size = reader.u32()
        body = _Reader(reader.bytes(size), reader.pos - size)
        if sid == 2:
            imports = _shared_imports(body, module, field_name, max_pages)
            if imports is not None:
                return (wasm[:start] + bytes([2]) + uleb(len(imports)) + imports
                        + wasm[reader.pos:])
    raise WasmFormatError(f"the module imports no memory {module}.{field_name}")


def _shared_imports(body: _Reader, module: str, field_name: str, max_pages: int
                    ) -> bytes | None:
    """The import section's payload with the memory rewritten, or ``None`` without it."""
    out = bytearray(uleb(body.u32()))
    found = False
    while body.pos < len(body.data):
        head = body.pos
        names = (body.name(), body.name())
        kind = body.byte()
        if kind == 2 and names == (module, field_name):
            entry = body.data[head:body.pos]  # the two names and the kind byte
            limits, _ = body.limits()
            out += entry + _limits(Limits(limits.min, max(max_pages, limits.min)), shared=True)
            found = True
            continue
        _skip_import(body, kind)
        out += body.data[head:body.pos]
    return bytes(out) if found else None


def _skip_import(body: _Reader, kind: int) -> None:
    if kind == 0:
        body.u32()
    elif kind == 1:
        body.byte()
        body.limits()
    elif kind == 2:
        body.limits()
    elif kind == 3:
        body.valtype()
        body.byte()
    elif kind == 4:
        body.byte()
        body.u32()
    else:
        raise body.fail(f"unknown import kind {kind}")
