"""JSON carries no dtype: ``wasmnn run`` gives each JSON array its input's declared dtype,
exactly or with a one-line error (exit 7)."""

import json

import numpy as np
import pytest

import modelc
import nn
from runtime.cli import main
from runtime.tensor_io import read_arrays


@pytest.fixture(scope="module")
def embedding(tmp_path_factory):
    np.random.seed(0)
    model = nn.Embedding(10, 4).eval()
    path = tmp_path_factory.mktemp("embedding") / "embedding.wasm"
    path.write_bytes(modelc.export(model, {"ids": np.zeros((1, 3), np.int64)}))
    return model, path


@pytest.mark.parametrize("document", [
    lambda ids: {"ids": ids},
    lambda ids: ids,
])
def test_json_integers_feed_an_int64_input(embedding, tmp_path, capsys, document):
    model, path = embedding
    ids = [[7, 0, 3]]
    source = tmp_path / "ids.json"
    source.write_text(json.dumps(document(ids)))
    assert main(["run", str(path), "-i", str(source), "--json"]) == 0
    got = np.array(json.loads(capsys.readouterr().out)["outputs"]["output0"], np.float32)
    np.testing.assert_array_equal(got, model(np.array(ids, np.int64)))


@pytest.mark.parametrize("text, message", [
    ('{"ids": [[1, 2.5, 3]]}', r"input 'ids' \(int64\): expected integers"),
    ("[[1, 2, 1e30]]", r"outside the int64 range"),
    ("[[true, false, true]]", r"\(int64\): expected numbers, got booleans"),
])
def test_json_that_an_integer_input_cannot_hold_is_refused(embedding, tmp_path, capsys, text,
                                                           message):
    _, path = embedding
    source = tmp_path / "ids.json"
    source.write_text(text)
    spec = str(source) if text.startswith("{") else f"ids={source}"
    assert main(["run", str(path), "-i", spec]) == 7
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and __import__("re").search(message, err)


@pytest.mark.parametrize("text, dtype, expected", [
    ("[true, false, 1, 0]", np.bool_, [True, False, True, False]),
    ("[255, 0, 3.0]", np.uint8, [255, 0, 3]),
    ("[-2147483648, 2147483647]", np.int32, [-2147483648, 2147483647]),
    ("[0.5, \"NaN\", 2]", np.float16, [0.5, np.nan, 2]),
])
def test_json_arrays_take_the_dtype_asked_for_exactly(tmp_path, text, dtype, expected):
    source = tmp_path / "x.json"
    source.write_text(text)
    got = read_arrays(source, dtype_of=lambda name: np.dtype(dtype))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.array(expected, dtype))


@pytest.mark.parametrize("text, dtype", [
    ("[256]", np.uint8), ("[-1]", np.uint8), ("[2147483648]", np.int32), ("[2]", np.bool_),
    ("[\"Infinity\"]", np.int64), ("[100000]", np.float16),
])
def test_json_values_the_dtype_cannot_hold_are_refused(tmp_path, text, dtype):
    source = tmp_path / "x.json"
    source.write_text(text)
    with pytest.raises(ValueError, match="cannot read"):
        read_arrays(source, dtype_of=lambda name: np.dtype(dtype))
