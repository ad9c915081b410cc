"""Compiled-code cache: in memory per engine, and on disk across processes.

A disk entry is ``MAGIC + sha256(payload) + payload``. Two kinds of entries live side by
side: ``<key>.cwasm`` holds wasmtime's serialized machine code, keyed by the module bytes,
the engine settings and the wasmtime version; ``<key>.wasm`` holds module bytes that the
runtime generates itself (the kernel module), keyed by a name and a fingerprint of the
generator's source, so a warm start neither regenerates nor recompiles them. Entries are
written atomically (temp file + rename, safe under concurrent writers) and their checksum is
verified before anything reads them, because deserializing corrupt machine code is not safe.
A bad entry is deleted and rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

import wasmtime

MAGIC = b"wasmnn-cwasm-1\n"
_memory: dict[tuple[int, str], wasmtime.Module] = {}
_lock = threading.Lock()


def _wasmtime_version() -> str:
    try:
        return version("wasmtime")
    except PackageNotFoundError:
        return "unknown"


_WASMTIME_VERSION = _wasmtime_version()


def cache_dir() -> Path | None:
    """``$WASMNN_CACHE_DIR``, else ``$XDG_CACHE_HOME/wasmnn``, else ``~/.cache/wasmnn``;
    ``WASMNN_CACHE_DIR=off`` disables the disk cache."""
    configured = os.environ.get("WASMNN_CACHE_DIR")
    if configured == "off":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "wasmnn"


def _key(wasm: bytes, engine_key: str) -> str:
    digest = hashlib.sha256(f"{_WASMTIME_VERSION}|{engine_key}|".encode())
    digest.update(wasm)
    return digest.hexdigest()


def _read_entry(path: Path) -> bytes | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC)
    payload = raw[head + 32:]
    if raw[:head] != MAGIC or hashlib.sha256(payload).digest() != raw[head:head + 32]:
        path.unlink(missing_ok=True)
        return None
    return payload


def _write_entry(path: Path, payload: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as out:
            out.write(MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except OSError:
        pass  # NOTE: the cache is an optimisation; a read-only disk must not break loading.


def source_fingerprint(directory: Path) -> str:
    """A digest of every ``*.py`` file under ``directory`` (names and contents): it changes
    whenever the code that generates a module could have."""
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*.py")):
        digest.update(str(path.relative_to(directory)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def generated_module(name: str, fingerprint: str, build: Callable[[], bytes]) -> bytes:
    """The bytes ``build()`` returns, from disk when a run with the same ``fingerprint`` (see
    ``source_fingerprint``) already built them; generating a module in Python costs more than
    loading its compiled code."""
    directory = cache_dir()
    if directory is None:
        return build()
    path = directory / f"{name}-{fingerprint[:32]}.wasm"
    wasm = _read_entry(path)
    if wasm is None:
        wasm = build()
        _write_entry(path, wasm)
    return wasm


def compile_module(engine: wasmtime.Engine, wasm: bytes, engine_key: str) -> wasmtime.Module:
    """A compiled module for ``wasm`` on ``engine``, from memory, disk, or a fresh compile.

    Raises:
        wasmtime.WasmtimeError: ``wasm`` does not compile (the caller translates it).
    """
    key = _key(wasm, engine_key)
    with _lock:
        cached = _memory.get((id(engine), key))
    if cached is not None:
        return cached
    directory = cache_dir()
    path = directory / f"{key}.cwasm" if directory else None
    module = None
    if path is not None:
        payload = _read_entry(path)
        if payload is not None:
            try:
                module = wasmtime.Module.deserialize(engine, payload)
            except wasmtime.WasmtimeError:
                path.unlink(missing_ok=True)
    if module is None:
        module = wasmtime.Module(engine, wasm)
        if path is not None:
            _write_entry(path, module.serialize())
    with _lock:
        _memory[(id(engine), key)] = module
    return module
