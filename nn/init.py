"""Parameter initialisation in place, as ``torch.nn.init``, from one seedable generator.

Layers draw their initial weights here (torch's default schemes), so ``manual_seed``
makes construction reproducible. Loaded state dicts overwrite these values anyway.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["generator", "kaiming_uniform_", "manual_seed", "normal_", "ones_", "uniform_",
           "xavier_uniform_", "zeros_"]

_generator = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Reseed the generator behind initialisation and dropout.

    >>> manual_seed(0); a = uniform_(np.empty(2)); manual_seed(0)
    >>> bool((a == uniform_(np.empty(2))).all())
    True
    """
    global _generator
    _generator = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    """The generator behind initialisation and dropout."""
    return _generator


def uniform_(array: np.ndarray, a: float = 0.0, b: float = 1.0) -> np.ndarray:
    """Fill ``array`` from U(a, b); returns it."""
    array[...] = _generator.uniform(a, b, size=array.shape)
    return array


def normal_(array: np.ndarray, mean: float = 0.0, std: float = 1.0) -> np.ndarray:
    """Fill ``array`` from N(mean, std²); returns it."""
    array[...] = _generator.normal(mean, std, size=array.shape)
    return array


def zeros_(array: np.ndarray) -> np.ndarray:
    """Fill ``array`` with 0; returns it."""
    array[...] = 0
    return array


def ones_(array: np.ndarray) -> np.ndarray:
    """Fill ``array`` with 1; returns it."""
    array[...] = 1
    return array


def _fans(array: np.ndarray) -> tuple[int, int]:
    receptive = int(np.prod(array.shape[2:])) if array.ndim > 2 else 1
    return array.shape[1] * receptive, array.shape[0] * receptive


def kaiming_uniform_(array: np.ndarray, a: float = 0.0) -> np.ndarray:
    """U(-b, b) with ``b = sqrt(6 / ((1 + a²) fan_in))`` (leaky-relu gain, fan_in mode)."""
    fan_in, _ = _fans(array)
    bound = math.sqrt(6.0 / ((1 + a * a) * fan_in)) if fan_in else 0.0
    return uniform_(array, -bound, bound)


def xavier_uniform_(array: np.ndarray, gain: float = 1.0) -> np.ndarray:
    """U(-b, b) with ``b = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(array)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(array, -bound, bound)
