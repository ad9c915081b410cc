"""Smoke test of the whole pipeline in well under a second: nn -> modelc -> runtime."""

import numpy as np

import modelc
import nn
import runtime


def test_tiny_pipeline():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU()).eval()
    x = np.array([[1.0, -2.0, 0.5]], np.float32)
    y = runtime.load(modelc.export(model, (x,))).run(x)["output0"]
    w, b = np.asarray(model[0].weight), np.asarray(model[0].bias)
    np.testing.assert_allclose(y, np.maximum(x @ w.T + b, 0), rtol=1e-6, atol=1e-7)
