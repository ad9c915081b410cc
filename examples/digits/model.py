"""The digits classifier: its architecture, its trained weights, and the data split.

The weights in ``digits_mlp.npz`` were trained once by ``train.py`` (PyTorch) and are
stored with PyTorch's state-dict key names, so ``nn`` loads them unchanged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import nn

WEIGHTS = Path(__file__).with_name("digits_mlp.npz")


def build() -> nn.Sequential:
    """64 pixels -> 128 -> 64 -> 10 classes, ReLU between."""
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def load_trained() -> nn.Sequential:
    """The classifier with the shipped weights, in eval mode."""
    model = build()
    with np.load(WEIGHTS) as state:
        model.load_state_dict({k: state[k] for k in state.files})
    return model.eval()


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits (shipped with the package; no download), scaled to [0, 1]
    as float32, split 75/25 with a fixed seed: ``(x_train, y_train, x_test, y_test)``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(
        x, digits.target, test_size=0.25, random_state=0, stratify=digits.target)
    return x_train, y_train, x_test, y_test
