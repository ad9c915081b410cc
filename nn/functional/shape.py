"""Data movement: reshape, permute, concat, split, slice, pad, embedding (a row gather),
and the composites built on them (transpose, flatten, unsqueeze, squeeze)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from .._dispatch import primitive

__all__ = ["concat", "embedding", "flatten", "pad", "permute", "reshape", "slice", "split",
           "squeeze", "transpose", "unsqueeze"]

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap"}


@primitive
def reshape(input: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """``input`` with a new shape of the same size; one entry may be -1.

    >>> reshape(np.zeros((2, 3), np.float32), (3, -1)).shape
    (3, 2)
    """
    return np.reshape(input, tuple(shape))


@primitive
def permute(input: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """Axes reordered so that output axis ``i`` is input axis ``dims[i]``.

    >>> permute(np.zeros((2, 3, 4), np.float32), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return np.transpose(input, tuple(dims))


@primitive
def concat(tensors: Sequence[np.ndarray], dim: int = 0) -> np.ndarray:
    """Arrays joined along an existing axis ``dim``, as ``torch.cat``.

    >>> concat([np.zeros((1, 2)), np.ones((3, 2))], dim=0).shape
    (4, 2)
    """
    return np.concatenate(list(tensors), axis=dim)


@primitive
def split(input: np.ndarray, split_size_or_sections: int | Sequence[int],
          dim: int = 0) -> tuple[np.ndarray, ...]:
    """Chunks along ``dim``: of size ``split_size_or_sections`` (the last may be smaller),
    or of the listed sizes, as ``torch.split``.

    Raises:
        ValueError: listed sizes that do not add up to the axis length.

    >>> [part.shape for part in split(np.zeros((5, 2)), 2)]
    [(2, 2), (2, 2), (1, 2)]
    """
    length = input.shape[dim]
    if isinstance(split_size_or_sections, int):
        sizes = [split_size_or_sections] * (length // split_size_or_sections)
        if length % split_size_or_sections:
            sizes.append(length % split_size_or_sections)
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != length:
            raise ValueError(f"split sizes {sizes} must sum to the length {length} of dim {dim}")
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.split(input, bounds, axis=dim))


@primitive
def slice(input: np.ndarray, dim: int, start: int | None = None, end: int | None = None,
          step: int = 1) -> np.ndarray:
    """``input[..., start:end:step, ...]`` on axis ``dim`` (Python slice bounds).

    >>> slice(np.arange(6).reshape(2, 3), 1, 1, 3).tolist()
    [[1, 2], [4, 5]]
    """
    index = [builtins.slice(None)] * input.ndim
    index[dim] = builtins.slice(start, end, step)
    return input[tuple(index)]


@primitive
def pad(input: np.ndarray, pad: Sequence[int], mode: str = "constant",
        value: float = 0.0) -> np.ndarray:
    """Pad the last ``len(pad) // 2`` axes, last axis first, as ``torch.nn.functional.pad``:
    ``pad = (left, right, top, bottom, ...)``. Negative amounts crop.

    Raises:
        ValueError: an odd-length ``pad``, or an unknown ``mode``.

    >>> pad(np.ones((1, 2), np.float32), (1, 0)).tolist()
    [[0.0, 1.0, 1.0]]
    """
    if len(pad) % 2:
        raise ValueError(f"pad must have an even length, got {tuple(pad)!r}")
    if mode not in _PAD_MODES:
        raise ValueError(f"unknown padding mode {mode!r}; available: {sorted(_PAD_MODES)}")
    widths = [(0, 0)] * input.ndim
    crop = [builtins.slice(None)] * input.ndim
    for i in range(len(pad) // 2):
        axis = input.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        widths[axis] = (max(before, 0), max(after, 0))
        crop[axis] = builtins.slice(-min(before, 0),
                                    input.shape[axis] + widths[axis][0] + widths[axis][1]
                                    + min(after, 0))
    if mode == "constant":
        padded = np.pad(input, widths, mode="constant", constant_values=value)
    else:
        padded = np.pad(input, widths, mode=_PAD_MODES[mode])  # type: ignore[call-overload]
    return padded[tuple(crop)]


@primitive
def embedding(input: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Rows of ``weight`` gathered by the integer indices in ``input``: shape
    ``input.shape + (embedding_dim,)``.

    Raises:
        TypeError: ``input`` is not an integer array.
        IndexError: an index outside ``[0, num_embeddings)``.

    >>> embedding(np.array([[1, 0]]), np.eye(2, dtype=np.float32)).tolist()
    [[[0.0, 1.0], [1.0, 0.0]]]
    """
    indices = np.asarray(input)
    if not np.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"embedding indices must be an integer array, got dtype {indices.dtype}")
    if indices.size and (indices.min() < 0 or indices.max() >= weight.shape[0]):
        raise IndexError(f"embedding index out of range: indices span [{indices.min()}, "
                         f"{indices.max()}], num_embeddings is {weight.shape[0]}")
    return np.take(weight, indices, axis=0)


def transpose(input: np.ndarray, dim0: int, dim1: int) -> np.ndarray:
    """Axes ``dim0`` and ``dim1`` swapped (a ``permute``).

    >>> transpose(np.zeros((2, 3, 4)), 0, -1).shape
    (4, 3, 2)
    """
    dims = list(range(input.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return permute(input, dims)


def flatten(input: np.ndarray, start_dim: int = 0, end_dim: int = -1) -> np.ndarray:
    """Axes ``start_dim..end_dim`` merged into one (a ``reshape``).

    >>> flatten(np.zeros((2, 3, 4)), 1).shape
    (2, 12)
    """
    shape = tuple(input.shape)
    start, end = start_dim % max(len(shape), 1), end_dim % max(len(shape), 1)
    return reshape(input, (*shape[:start], -1, *shape[end + 1:]))


def unsqueeze(input: np.ndarray, dim: int) -> np.ndarray:
    """A size-1 axis inserted at ``dim`` (a ``reshape``).

    >>> unsqueeze(np.zeros((2, 3)), -1).shape
    (2, 3, 1)
    """
    shape = list(input.shape)
    shape.insert(dim % (len(shape) + 1), 1)
    return reshape(input, shape)


def squeeze(input: np.ndarray, dim: int) -> np.ndarray:
    """Axis ``dim`` removed if its size is 1 (a ``reshape``), as ``torch.squeeze(x, dim)``.

    >>> squeeze(np.zeros((2, 1, 3)), 1).shape
    (2, 3)
    """
    shape = list(input.shape)
    if shape[dim] == 1:
        del shape[dim]
    return reshape(input, shape)
