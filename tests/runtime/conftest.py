import numpy as np
import pytest

import modelc
import nn


@pytest.fixture(scope="session")
def mlp_wasm() -> bytes:
    """A 6 -> 4 -> 3 MLP with a symbolic batch in [1, 8], and its eager model."""
    return _build()[1]


@pytest.fixture(scope="session")
def mlp_model() -> nn.Module:
    return _build()[0]


_cache: dict[str, tuple[nn.Module, bytes]] = {}


def _build() -> tuple[nn.Module, bytes]:
    if "mlp" not in _cache:
        np.random.seed(0)
        model = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 3)).eval()
        wasm = modelc.export(model, {"x": np.zeros((2, 6), np.float32)},
                             dynamic={"x": {0: ("batch", 1, 8)}})
        _cache["mlp"] = (model, wasm)
    return _cache["mlp"]
