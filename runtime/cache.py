"""Compiled-code cache: in memory per engine, and on disk across processes.

Two kinds of disk entries live side by side: ``<key>.cwasm`` holds wasmtime's serialized
machine code, keyed by the module bytes, the engine settings and the wasmtime version;
``<name>-<fingerprint>.wasm`` holds module bytes the runtime generates itself (the kernel
module), keyed by a fingerprint of the generator's source, so a warm start neither
regenerates nor recompiles them. Each entry has a ``.sum`` file beside it (``MAGIC``, the
length and a CRC-32 of the entry). Entries and sums are written atomically (temp file +
rename, safe under concurrent writers) and checked before anything reads them, because
deserializing corrupt machine code is not safe; a bad entry is deleted and rebuilt. Compiled
code is then memory-mapped by wasmtime (``Module.deserialize_file``), not copied.

The directory is bounded (``$WASMNN_CACHE_MAX_BYTES``, default 2 GiB): at most once an hour
(a stamp file's age, one ``stat`` per write, tells), a write prunes the least recently used
entries (a hit touches its ``.sum``) until the rest fits, and leftover temp files.

NOTE: the checksum catches corruption (truncation, flipped bits), not tampering: whoever can
write the cache directory can plant machine code whatever the checksum, so the directory
must be as trusted as the runtime itself.
"""

from __future__ import annotations

import functools
import hashlib
import mmap
import os
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import wasmtime

MAGIC = b"wasmnn-cache-2\n"
DEFAULT_MAX_BYTES = 2 << 30
PRUNE_INTERVAL_S = 3600.0
_PRUNE_STAMP = ".last-prune"
_ENTRY_SUFFIXES = (".cwasm", ".wasm")
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
    ``WASMNN_CACHE_DIR=off`` disables the disk cache.

    Raises:
        ValueError: ``$WASMNN_CACHE_MAX_BYTES`` is malformed (see ``max_bytes``).
    """
    configured = os.environ.get("WASMNN_CACHE_DIR")
    if configured == "off":
        return None
    max_bytes()
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "wasmnn"


def max_bytes() -> int:
    """The disk cache's bound in bytes: ``$WASMNN_CACHE_MAX_BYTES``, else ``DEFAULT_MAX_BYTES``.

    Raises:
        ValueError: the variable is set to something other than a non-negative integer.
    """
    configured = os.environ.get("WASMNN_CACHE_MAX_BYTES")
    if configured is None:
        return DEFAULT_MAX_BYTES
    if not configured.strip().isdigit():
        raise ValueError(f"WASMNN_CACHE_MAX_BYTES={configured!r}: expected a number of bytes")
    return int(configured)


def prune(directory: Path, limit: int) -> int:
    """Delete the least recently used entries of ``directory`` (and temp files older than
    ``PRUNE_INTERVAL_S``) until its entries take at most ``limit`` bytes; return the bytes
    freed. Concurrent readers are safe: a deleted entry is a miss, and a mapped one stays
    readable until unmapped."""
    now = time.time()
    entries: list[tuple[float, int, Path]] = []
    freed = 0
    for path in directory.iterdir():
        try:
            if path.name.startswith(".tmp-"):
                stat = path.stat()
                if now - stat.st_mtime > PRUNE_INTERVAL_S:
                    path.unlink()
                    freed += stat.st_size
            elif path.suffix in _ENTRY_SUFFIXES:
                size = path.stat().st_size + _sum_path(path).stat().st_size
                entries.append((_sum_path(path).stat().st_mtime, size, path))
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries, key=lambda entry: entry[0]):
        if total <= limit:
            break
        _discard(path)
        total -= size
        freed += size
    return freed


def _prune_if_due(directory: Path) -> None:
    stamp = directory / _PRUNE_STAMP
    try:
        if time.time() - stamp.stat().st_mtime < PRUNE_INTERVAL_S:
            return
    except FileNotFoundError:
        pass
    stamp.touch()
    prune(directory, max_bytes())


def _key(wasm: bytes, engine_key: str) -> str:
    digest = hashlib.sha256(f"{_WASMTIME_VERSION}|{engine_key}|".encode())
    digest.update(wasm)
    return digest.hexdigest()


def _sum_path(path: Path) -> Path:
    return path.with_name(path.name + ".sum")


def _checksum(data: bytes | bytearray | mmap.mmap) -> bytes:
    return MAGIC + len(data).to_bytes(8, "little") + zlib.crc32(data).to_bytes(4, "little")


def _verified(path: Path) -> bool:
    """Whether the entry at ``path`` matches its ``.sum``; a bad or half-written entry is
    deleted (with its sum) so that it is rebuilt."""
    try:
        expected = _sum_path(path).read_bytes()
        with open(path, "rb") as file, mmap.mmap(file.fileno(), 0,
                                                 access=mmap.ACCESS_READ) as data:
            good = _checksum(data) == expected
        if good:
            os.utime(_sum_path(path))
    except (OSError, ValueError):  # NOTE: mmap raises ValueError for an empty file.
        good = False
    if not good:
        _discard(path)
    return good


def _discard(path: Path) -> None:
    for stale in (path, _sum_path(path)):
        try:
            stale.unlink(missing_ok=True)
        except OSError:
            pass


def _atomic_write(path: Path, data: bytes | bytearray) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)


def _write_entry(path: Path, payload: bytes | bytearray) -> None:
    """Write ``payload`` then its sum; a reader that comes between the two finds no valid sum
    and rebuilds, it never trusts unchecked bytes."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, payload)
        _atomic_write(_sum_path(path), _checksum(payload))
        _prune_if_due(path.parent)
    except OSError:
        pass  # NOTE: the cache is an optimisation; a read-only disk must not break loading.


def source_fingerprint(directory: Path) -> str:
    """A digest of the name, size and modification time of every ``*.py`` file under
    ``directory`` (what Python's own bytecode cache trusts): it changes whenever the code
    that generates a module is edited."""
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(directory)}|{stat.st_size}|{stat.st_mtime_ns}\0"
                      .encode())
    return digest.hexdigest()


@functools.cache
def process_fingerprint(directory: Path) -> str:
    """``source_fingerprint(directory)`` as this process first saw it: a process keeps running
    the code it imported, so what it builds after the sources change on disk must not be
    stored under the new sources' fingerprint."""
    return source_fingerprint(directory)


def generated_module(name: str, fingerprint: str, build: Callable[[], bytes]) -> bytes:
    """The bytes ``build()`` returns, from disk when a run with the same ``fingerprint`` (see
    ``process_fingerprint``) already built them: generating a module in Python costs more than
    loading its compiled code."""
    directory = cache_dir()
    if directory is None:
        return build()
    path = directory / f"{name}-{fingerprint[:32]}.wasm"
    if _verified(path):
        try:
            return path.read_bytes()
        except OSError:
            pass
    wasm = build()
    _write_entry(path, wasm)
    return wasm


def compile_module(engine: wasmtime.Engine, wasm: bytes, engine_key: str,
                   compiler: wasmtime.Engine | None = None) -> wasmtime.Module:
    """A compiled module for ``wasm`` on ``engine``, from memory, disk, or a fresh compile.

    A ``compiler`` engine compiles it instead (one with another cranelift opt level, and
    otherwise ``engine``'s settings, which wasmtime checks): its machine code is serialized
    and loaded into ``engine``, so ``engine_key`` must name what differs.

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
    if path is not None and _verified(path):
        try:
            module = wasmtime.Module.deserialize_file(engine, str(path))
        except wasmtime.WasmtimeError:
            _discard(path)  # NOTE: e.g. written by another wasmtime build.
    if module is None:
        module = (wasmtime.Module(engine, wasm) if compiler is None else
                  wasmtime.Module.deserialize(engine, wasmtime.Module(compiler, wasm).serialize()))
        if path is not None:
            _write_entry(path, module.serialize())
    with _lock:
        _memory[(id(engine), key)] = module
    return module
