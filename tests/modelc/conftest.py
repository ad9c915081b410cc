import numpy as np
import pytest

import nn


@pytest.fixture
def mlp() -> nn.Sequential:
    """A small seeded MLP in eval mode."""
    np.random.seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    rng = np.random.default_rng(0)
    for name, param in model.named_parameters():
        param[...] = rng.standard_normal(param.shape).astype(np.float32)
    return model.eval()
