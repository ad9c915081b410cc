"""State dicts round-trip through safetensors and ``.npz``, and a torch checkpoint of a
composite model loads into the same ``nn`` model and gives torch's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from nn_parity import assert_close, randomize

import nn
from nn.serialization import (
    load_npz,
    load_safetensors,
    load_torch_state_dict,
    save_npz,
    save_safetensors,
)


def _model(lib: object) -> object:
    return lib.Sequential(lib.Conv2d(3, 4, 3), lib.BatchNorm2d(4), lib.ReLU(),  # type: ignore
                          lib.AdaptiveAvgPool2d(1), lib.Flatten(), lib.Linear(4, 2))


@pytest.mark.parametrize("save, load, suffix", [(save_npz, load_npz, "npz"),
                                                (save_safetensors, load_safetensors,
                                                 "safetensors")])
def test_state_dict_round_trips(tmp_path: Path, save: object, load: object,
                                suffix: str) -> None:
    if suffix == "safetensors":
        pytest.importorskip("safetensors")
    nn.init.manual_seed(0)
    source, target = _model(nn), _model(nn)
    path = tmp_path / f"weights.{suffix}"
    save(source.state_dict(), path)  # type: ignore[operator]
    loaded = load(path)  # type: ignore[operator]
    assert sorted(loaded) == sorted(source.state_dict())  # NOTE: safetensors sorts its keys
    assert loaded["1.num_batches_tracked"].dtype == np.int64
    target.load_state_dict(loaded)
    for key, value in source.state_dict().items():
        np.testing.assert_array_equal(target.state_dict()[key], value)


def test_torch_checkpoint_loads_unchanged_and_matches(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = randomize(_model(torch.nn)).eval()
    path = tmp_path / "model.pt"
    torch.save(theirs.state_dict(), path)
    ours = _model(nn)
    ours.load_state_dict(load_torch_state_dict(path))
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    with torch.no_grad():
        assert_close(ours.eval()(x), theirs(torch.from_numpy(x)))
    torch.save({"bf16": torch.ones(2, dtype=torch.bfloat16)}, tmp_path / "bf16.pt")
    assert load_torch_state_dict(tmp_path / "bf16.pt")["bf16"].dtype == np.float32
    torch.save([torch.ones(1)], tmp_path / "list.pt")
    with pytest.raises(TypeError, match="expected a state dict .* got list"):
        load_torch_state_dict(tmp_path / "list.pt")


def test_missing_safetensors_file_is_named(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    with pytest.raises(FileNotFoundError, match="no safetensors file at .*absent.safetensors"):
        load_safetensors(tmp_path / "absent.safetensors")
