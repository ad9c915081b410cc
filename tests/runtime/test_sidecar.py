import os
import tracemalloc

import numpy as np
import pytest

import modelc
import nn
import runtime
from runtime import ModelFormatError


@pytest.fixture
def exported(tmp_path):
    np.random.seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).eval()
    path = tmp_path / "m.wasm"
    wasm = modelc.export(model, (np.zeros((2, 8), np.float32),), path, sidecar=True,
                         dynamic={"input0": {0: ("batch", 1, 4)}})
    return model, path, wasm


def test_sidecar_model_is_small_and_runs_from_its_directory(exported):
    model, path, wasm = exported
    weights = path.with_suffix(".weights")
    embedded = modelc.export(model, (np.zeros((2, 8), np.float32),),
                             dynamic={"input0": {0: ("batch", 1, 4)}})
    assert len(wasm) + weights.stat().st_size >= len(embedded) - 200
    assert len(wasm) < len(embedded) - weights.stat().st_size + 200
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    with runtime.load(path, instances=2) as session:
        np.testing.assert_allclose(session.run(x)["output0"], model(x), rtol=1e-5, atol=1e-6)


def test_weights_argument_serves_bytes_loads(exported):
    model, path, wasm = exported
    x = np.ones((1, 8), np.float32)
    out = runtime.load(wasm, weights=path.with_suffix(".weights")).run(x)["output0"]
    np.testing.assert_allclose(out, model(x), rtol=1e-5, atol=1e-6)


def test_missing_wrong_or_foreign_weights_are_refused(exported, tmp_path):
    _, path, wasm = exported
    with pytest.raises(ModelFormatError, match="keeps its weights in a sidecar file 'm.weights'"):
        runtime.load(wasm)
    with pytest.raises(ModelFormatError, match="have 3 bytes; the model expects"):
        runtime.load(wasm, weights=b"abc")
    weights = path.with_suffix(".weights")
    data = bytearray(weights.read_bytes())
    data[0] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match="SHA-256 differs"):
        runtime.load(path)
    weights.unlink()
    with pytest.raises(ModelFormatError, match="sidecar weights file .* does not exist"):
        runtime.load(path)


@pytest.mark.parametrize("name", ["../etc/passwd", "/abs/path", "sub/dir.weights", "..",
                                  ".hidden"])
def test_metadata_cannot_point_outside_the_model_directory(exported, name):
    from test_session import _meta, _with_metadata
    wasm = exported[2]
    meta = _meta(wasm)
    meta["sidecar"]["file"] = name
    with pytest.raises(ModelFormatError, match="must be a plain file name"):
        runtime.load(_with_metadata(wasm, meta))


def test_standalone_or_pathless_sidecar_is_a_clear_error():
    model = nn.Sequential(nn.Linear(2, 2)).eval()
    with pytest.raises(ValueError, match="sidecar=True needs a path"):
        modelc.export(model, (np.zeros((1, 2), np.float32),), sidecar=True)


def test_a_sidecar_file_of_the_wrong_size_is_refused_before_it_is_read(exported):
    _, path, _ = exported
    weights = path.with_suffix(".weights")
    os.truncate(weights, 6 << 30)  # sparse: 6 GiB that reading would have to allocate
    tracemalloc.start()
    try:
        with pytest.raises(ModelFormatError, match=r"m.weights' have 6442450944 bytes; the "
                                                   r"model expects \d+"):
            runtime.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20
