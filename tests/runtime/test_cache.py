import numpy as np
import pytest

import runtime
from runtime import cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WASMNN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_memory", {})
    return tmp_path


def test_compiled_code_is_written_and_reused(cache_dir, mlp_wasm):
    runtime.load(mlp_wasm)
    entries = sorted(cache_dir.glob("*.cwasm"))
    assert len(entries) == 2  # the model and the kernel module
    stamps = [e.stat().st_mtime_ns for e in entries]
    cache._memory.clear()
    runtime.load(mlp_wasm)
    assert [e.stat().st_mtime_ns for e in entries] == stamps


def test_corrupt_entry_is_detected_and_rebuilt(cache_dir, mlp_wasm, mlp_model):
    runtime.load(mlp_wasm)
    for entry in cache_dir.glob("*.cwasm"):
        raw = bytearray(entry.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        entry.write_bytes(bytes(raw))
    cache._memory.clear()
    x = np.ones((2, 6), np.float32)
    np.testing.assert_allclose(runtime.load(mlp_wasm).run(x)["output0"], mlp_model(x),
                               rtol=1e-5, atol=1e-6)
    for entry in cache_dir.glob("*.cwasm"):
        assert cache._read_entry(entry) is not None


def test_cache_can_be_turned_off(monkeypatch, tmp_path, mlp_wasm):
    monkeypatch.setenv("WASMNN_CACHE_DIR", "off")
    monkeypatch.setattr(cache, "_memory", {})
    monkeypatch.chdir(tmp_path)
    runtime.load(mlp_wasm)
    assert not list(tmp_path.rglob("*.cwasm"))
