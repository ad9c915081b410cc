"""A model's large data segments are compiled out of it and written into each instance's
memory from the file (or bytes) it was loaded from."""

import numpy as np
import pytest

import modelc
import nn
import runtime
from runtime import ModelFormatError
from runtime.data_segments import LARGE, Segment, Segments, split
from wasm_kernels.wasm import read_module


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    """An MLP with 1.2 MB of weights, batch in [1, 8], in a file."""
    rng = np.random.default_rng(3)
    model = nn.Sequential(nn.Linear(300, 1000), nn.ReLU(), nn.Linear(1000, 10)).eval()
    for param in model.parameters():
        param[...] = rng.standard_normal(param.shape).astype(np.float32) * 0.05
    path = tmp_path_factory.mktemp("segments") / "mlp.wasm"
    modelc.export(model, {"x": np.zeros((2, 300), np.float32)}, path,
                  dynamic={"x": {0: ("batch", 1, 8)}})
    return model, path


def test_split_leaves_the_weights_out_and_keeps_the_interface(model_file):
    _, path = model_file
    whole = path.read_bytes()
    module, segments = split(path)
    assert segments.nbytes >= 301_000 * 4 and all(s.size >= LARGE for s in segments.segments)
    assert len(module) <= len(whole) - segments.nbytes
    for segment in segments.segments:
        assert whole[segment.start:segment.start + 64] not in module
    assert read_module(module).custom("wasmnn.model") == read_module(whole).custom(
        "wasmnn.model")
    assert split(whole)[0] == module


@pytest.mark.parametrize("source", ["path", "bytes"])
def test_sessions_from_a_path_or_bytes_compute_what_eager_does(model_file, source):
    model, path = model_file
    x = np.random.default_rng(4).standard_normal((5, 300)).astype(np.float32)
    with runtime.load(path if source == "path" else path.read_bytes(), instances=2) as session:
        with session.lease() as first:
            a = first.run(x)["output0"]
            b = session.run(x)["output0"]  # a second instance, its weights written again
    np.testing.assert_allclose(a, model(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(a, b)


def test_a_model_file_changed_after_loading_is_refused_for_new_instances(model_file, tmp_path):
    _, path = model_file
    copy = tmp_path / "m.wasm"
    copy.write_bytes(path.read_bytes())
    x = np.zeros((1, 300), np.float32)
    with runtime.load(copy, instances=2) as session:
        with session.lease() as first:
            first.run(x)
            with copy.open("ab") as file:
                file.write(b"\0")
            with pytest.raises(ModelFormatError, match="changed since it was loaded"):
                session.run(x)


def test_a_segment_outside_memory_is_refused():
    segments = Segments(bytes(100), [Segment(address=10, start=0, size=100)])
    with pytest.raises(ModelFormatError, match=r"spans bytes \[10, 110\) but the model's "
                                               r"memory has 64 bytes"):
        segments.write(np.zeros(64, np.uint8))


def test_bytes_that_are_not_a_module_are_left_to_the_compiler():
    module, segments = split(b"\0asm\x01\0\0\0\x0b\xff")
    assert module == b"\0asm\x01\0\0\0\x0b\xff" and not segments.segments
