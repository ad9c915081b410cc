"""Reductions over axes, and the numerically stable softmax family."""

from __future__ import annotations

import numpy as np

from .._dispatch import primitive
from .elementwise import exp, log

__all__ = ["amax", "log_softmax", "mean", "softmax", "sum", "topk"]

Dims = int | tuple[int, ...] | None


def _axes(dim: int | tuple[int, ...] | list[int] | None) -> int | tuple[int, ...] | None:
    return tuple(dim) if isinstance(dim, list) else dim


@primitive
def sum(input: np.ndarray, dim: Dims = None, keepdim: bool = False) -> np.ndarray:
    """Sum over ``dim`` (all axes when None), as ``torch.sum``.

    >>> sum(np.ones((2, 3), np.float32), dim=1).tolist()
    [3.0, 3.0]
    """
    return np.asarray(np.sum(input, axis=_axes(dim), keepdims=keepdim))


@primitive
def mean(input: np.ndarray, dim: Dims = None, keepdim: bool = False) -> np.ndarray:
    """Mean over ``dim`` (all axes when None), as ``torch.mean``.

    >>> mean(np.array([[1.0, 3.0]], np.float32), dim=-1).tolist()
    [2.0]
    """
    return np.asarray(np.mean(input, axis=_axes(dim), keepdims=keepdim))


@primitive
def amax(input: np.ndarray, dim: Dims = None, keepdim: bool = False) -> np.ndarray:
    """Maximum over ``dim`` (all axes when None), as ``torch.amax``.

    >>> amax(np.array([[1.0, 3.0]], np.float32), dim=-1).tolist()
    [3.0]
    """
    return np.asarray(np.max(input, axis=_axes(dim), keepdims=keepdim))


@primitive
def softmax(input: np.ndarray, dim: int) -> np.ndarray:
    """``exp(x) / sum(exp(x))`` along ``dim``, shifted by the max for stability.

    >>> softmax(np.zeros((1, 4), np.float32), dim=-1).tolist()
    [[0.25, 0.25, 0.25, 0.25]]
    """
    shifted = np.exp(input - np.max(input, axis=dim, keepdims=True))
    return shifted / np.sum(shifted, axis=dim, keepdims=True)


def log_softmax(input: np.ndarray, dim: int) -> np.ndarray:
    """``log(softmax(input, dim))``, computed without forming the softmax: a composite of
    reductions along ``dim`` (any axis) and elementwise ops.

    >>> [round(v, 4) for v in log_softmax(np.zeros(2, np.float32), dim=-1).tolist()]
    [-0.6931, -0.6931]
    """
    shifted = input - amax(input, dim, keepdim=True)
    return shifted - log(sum(exp(shifted), dim, keepdim=True))


@primitive
def topk(input: np.ndarray, k: int, dim: int = -1, largest: bool = True
         ) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest (or smallest) entries along ``dim``, sorted, and their int64
    indices; equal values keep their order (the lower index first), as ONNX's TopK.

    Raises:
        ValueError: ``k`` is outside ``[0, input.shape[dim]]``.

    >>> values, indices = topk(np.array([1.0, 3.0, 2.0, 3.0], np.float32), 2)
    >>> values.tolist(), indices.tolist()
    ([3.0, 3.0], [1, 3])
    """
    if not 0 <= k <= input.shape[dim]:
        raise ValueError(f"topk: k={k} is outside [0, {input.shape[dim]}] (the size of dim {dim})")
    # NOTE: ~x orders integers backwards without -x's overflow at the smallest one
    key = (-input if input.dtype.kind == "f" else ~input) if largest else input
    order = np.argsort(key, axis=dim, kind="stable")
    indices = np.take(order, np.arange(k), axis=dim).astype(np.int64)
    return np.take_along_axis(input, indices, axis=dim), indices
