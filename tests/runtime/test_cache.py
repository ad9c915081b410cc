"""The code cache, on the one-thread path (with threads the kernels import a shared memory
and a dispatch module is cached beside them; tests/runtime/test_threads.py)."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import runtime
import wasm_kernels
from runtime import cache
from wasm_kernels import abi
from wasm_kernels.wasm import read_module


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WASMNN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_memory", {})
    return tmp_path


def _cold() -> None:
    """Forget everything this process cached, as a fresh process would start."""
    cache._memory.clear()
    from runtime import session
    session._kernel_wasm.cache_clear()


def test_compiled_code_and_kernel_bytes_are_written_and_reused(cache_dir, mlp_wasm):
    _cold()
    runtime.load(mlp_wasm, threads=1)
    entries = sorted(cache_dir.glob("*.cwasm")) + sorted(cache_dir.glob("kernels-*.wasm"))
    assert len(entries) == 3  # the model, the kernel module, and the kernel module's bytes
    assert all(e.with_name(e.name + ".sum").is_file() for e in entries)
    stamps = [e.stat().st_mtime_ns for e in entries]
    _cold()
    runtime.load(mlp_wasm, threads=1)
    assert [e.stat().st_mtime_ns for e in entries] == stamps


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "no_sum", "not_machine_code"])
def test_bad_entries_are_detected_and_rebuilt(cache_dir, mlp_wasm, mlp_model, damage):
    _cold()
    runtime.load(mlp_wasm, threads=1)
    kinds = ("*.cwasm",) if damage == "not_machine_code" else ("*.cwasm", "*.wasm")
    for entry in [e for kind in kinds for e in cache_dir.glob(kind)]:
        raw = bytearray(entry.read_bytes())
        if damage == "flip":
            raw[len(raw) // 2] ^= 0xFF
            entry.write_bytes(bytes(raw))
        elif damage == "truncate":
            entry.write_bytes(bytes(raw[:len(raw) // 3]))
        elif damage == "empty":
            entry.write_bytes(b"")
        elif damage == "no_sum":
            entry.with_name(entry.name + ".sum").unlink()
        else:  # a well-formed entry with a matching sum that wasmtime will not take
            junk = b"\x7fELF not machine code"
            entry.write_bytes(junk)
            entry.with_name(entry.name + ".sum").write_bytes(cache._checksum(junk))
    _cold()
    x = np.ones((2, 6), np.float32)
    np.testing.assert_allclose(runtime.load(mlp_wasm, threads=1).run(x)["output0"],
                               mlp_model(x), rtol=1e-5, atol=1e-6)
    entries = list(cache_dir.glob("*.cwasm")) + list(cache_dir.glob("kernels-*.wasm"))
    assert len(entries) == 3 and all(cache._verified(e) for e in entries)


def test_concurrent_writers_leave_valid_entries(cache_dir, mlp_wasm, mlp_model):
    _cold()
    x = np.ones((1, 6), np.float32)
    results: list[np.ndarray] = []

    def load_and_run() -> None:
        results.append(runtime.load(mlp_wasm, instances=1, threads=1).run(x)["output0"])

    code = ("import numpy as np, runtime, sys; "
            "runtime.load(sys.stdin.buffer.read(), instances=1, threads=1)")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                              env={**__import__("os").environ,
                                   "WASMNN_CACHE_DIR": str(cache_dir)})
             for _ in range(3)]
    threads = [threading.Thread(target=load_and_run) for _ in range(3)]
    for t in threads:
        t.start()
    for p in procs:
        p.communicate(mlp_wasm, timeout=120)
        assert p.returncode == 0
    for t in threads:
        t.join()
    for out in results:
        np.testing.assert_allclose(out, mlp_model(x), rtol=1e-5, atol=1e-6)
    entries = list(cache_dir.glob("*.cwasm")) + list(cache_dir.glob("kernels-*.wasm"))
    assert len(entries) == 3 and all(cache._verified(e) for e in entries)
    assert not list(cache_dir.glob(".tmp-*"))


def test_source_fingerprint_follows_edits(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    before = cache.source_fingerprint(tmp_path)
    assert cache.source_fingerprint(tmp_path) == before
    (tmp_path / "a.py").write_text("x = 22\n")
    assert cache.source_fingerprint(tmp_path) != before


def test_process_fingerprint_keeps_what_the_process_first_saw(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    first = cache.process_fingerprint(tmp_path)
    (tmp_path / "a.py").write_text("x = 22\n")
    assert cache.source_fingerprint(tmp_path) != first
    assert cache.process_fingerprint(tmp_path) == first


def test_generated_module_builds_once(cache_dir):
    calls = []

    def build() -> bytes:
        calls.append(1)
        return b"\0asm\x01\0\0\0"

    assert cache.generated_module("thing", "f" * 64, build) == b"\0asm\x01\0\0\0"
    assert cache.generated_module("thing", "f" * 64, build) == b"\0asm\x01\0\0\0"
    assert len(calls) == 1
    cache.generated_module("thing", "e" * 64, build)
    assert len(calls) == 2


def test_cache_can_be_turned_off(monkeypatch, tmp_path, mlp_wasm):
    monkeypatch.setenv("WASMNN_CACHE_DIR", "off")
    monkeypatch.setattr(cache, "_memory", {})
    monkeypatch.chdir(tmp_path)
    _cold()
    runtime.load(mlp_wasm, threads=1)
    assert not list(tmp_path.rglob("*.cwasm")) and not list(tmp_path.rglob("*.wasm"))


def test_an_unwritable_cache_directory_does_not_break_loading(monkeypatch, tmp_path, mlp_wasm):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("WASMNN_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(cache, "_memory", {})
    _cold()
    outputs = runtime.load(mlp_wasm, threads=1).run(np.ones((1, 6), np.float32))
    assert outputs["output0"].shape == (1, 3)


def test_the_kernel_module_holds_only_what_the_model_imports(cache_dir, mlp_wasm):
    _cold()
    runtime.load(mlp_wasm, threads=1)
    imported = {i.name for i in read_module(mlp_wasm).imports
                if i.module == abi.MODULE}
    exported = set()
    for kernels in cache_dir.glob("kernels-*.wasm"):  # one module per opt level used
        exported |= {e.name for e in read_module(kernels.read_bytes()).exports}
    assert exported == imported | {wasm_kernels.MEMORY}


def _entry(directory, name: str, size: int, used: float) -> None:
    """An entry of ``size`` bytes whose last use was at time ``used``."""
    path = directory / name
    cache._write_entry(path, b"x" * size)
    os.utime(path.with_name(path.name + ".sum"), (used, used))


def test_prune_drops_least_recently_used_entries_first(cache_dir):
    (cache_dir / cache._PRUNE_STAMP).touch()
    sum_bytes = len(cache._checksum(b""))
    for age, name in enumerate(["newest.cwasm", "middle.wasm", "oldest.cwasm"]):
        _entry(cache_dir, name, 1000, time.time() - 100 * (age + 1))
    freed = cache.prune(cache_dir, 2 * (1000 + sum_bytes))
    assert freed == 1000 + sum_bytes
    assert sorted(p.name for p in cache_dir.glob("*wasm")) == ["middle.wasm", "newest.cwasm"]
    assert cache.prune(cache_dir, 0) == 2 * (1000 + sum_bytes)
    assert not list(cache_dir.glob("*wasm*"))


def test_a_hit_counts_as_a_use(cache_dir, mlp_wasm):
    (cache_dir / cache._PRUNE_STAMP).touch()
    _cold()
    runtime.load(mlp_wasm, threads=1)
    entries = list(cache_dir.glob("*wasm"))
    for entry in entries:
        os.utime(entry.with_name(entry.name + ".sum"), (1.0, 1.0))
    _entry(cache_dir, "unrelated.cwasm", 10, time.time() - 10)
    _cold()
    runtime.load(mlp_wasm, threads=1)
    total = sum(e.stat().st_size + e.with_name(e.name + ".sum").stat().st_size for e in entries)
    cache.prune(cache_dir, total)
    assert sorted(cache_dir.glob("*wasm")) == sorted(entries)


def test_writes_prune_at_most_once_an_interval(cache_dir, monkeypatch):
    monkeypatch.setenv("WASMNN_CACHE_MAX_BYTES", "0")
    cache._write_entry(cache_dir / "first.cwasm", b"x" * 10)
    assert not (cache_dir / "first.cwasm").exists()  # no stamp yet: the write pruned
    cache._write_entry(cache_dir / "second.cwasm", b"x" * 10)
    assert (cache_dir / "second.cwasm").exists()  # pruned a moment ago: not again
    stamp = cache_dir / cache._PRUNE_STAMP
    old = time.time() - cache.PRUNE_INTERVAL_S - 1
    os.utime(stamp, (old, old))
    cache._write_entry(cache_dir / "third.cwasm", b"x" * 10)
    assert not list(cache_dir.glob("*.cwasm"))


def test_stale_temp_files_are_removed(cache_dir):
    stale, fresh = cache_dir / ".tmp-stale", cache_dir / ".tmp-fresh"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"being written")
    old = time.time() - cache.PRUNE_INTERVAL_S - 1
    os.utime(stale, (old, old))
    cache.prune(cache_dir, 1 << 30)
    assert not stale.exists() and fresh.exists()


@pytest.mark.parametrize("value", ["2GiB", "-1", "lots"])
def test_a_malformed_bound_is_named(cache_dir, monkeypatch, value):
    monkeypatch.setenv("WASMNN_CACHE_MAX_BYTES", value)
    with pytest.raises(ValueError, match="WASMNN_CACHE_MAX_BYTES"):
        cache.cache_dir()
