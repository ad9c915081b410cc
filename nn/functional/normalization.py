"""Normalisation: ``layer_norm``, ``group_norm``, ``batch_norm`` (primitives),
``instance_norm`` and ``rms_norm`` (composites). Variances are biased, as in torch's forward."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._dispatch import primitive
from .elementwise import rsqrt
from .reduction import mean

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "rms_norm"]


def _affine(out: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None,
            shape: tuple[int, ...]) -> np.ndarray:
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


@primitive
def layer_norm(input: np.ndarray, normalized_shape: Sequence[int],
               weight: np.ndarray | None = None, bias: np.ndarray | None = None,
               eps: float = 1e-5) -> np.ndarray:
    """Normalise over the trailing ``normalized_shape`` axes, then scale and shift.

    Raises:
        ValueError: the input's trailing shape is not ``normalized_shape``.

    >>> layer_norm(np.array([[1.0, 3.0]], np.float32), (2,), eps=0.0).tolist()
    [[-1.0, 1.0]]
    """
    shape = tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise ValueError(f"Given normalized_shape={list(shape)}, expected input with shape "
                         f"[*, {', '.join(map(str, shape))}], but got input of size "
                         f"{list(input.shape)}")
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    mean = input.mean(axis=axes, keepdims=True)
    var = np.square(input - mean).mean(axis=axes, keepdims=True)
    out = (input - mean) / np.sqrt(var + eps)
    return _affine(out, weight, bias, shape).astype(input.dtype, copy=False)


@primitive
def group_norm(input: np.ndarray, num_groups: int, weight: np.ndarray | None = None,
               bias: np.ndarray | None = None, eps: float = 1e-5) -> np.ndarray:
    """Normalise each of ``num_groups`` channel groups of (N, C, *) over its channels and
    spatial positions, then scale and shift per channel.

    Raises:
        ValueError: C is not divisible by ``num_groups``.

    >>> group_norm(np.array([[[1.0], [3.0]]], np.float32), 1, eps=0.0).ravel().tolist()
    [-1.0, 1.0]
    """
    n, c = input.shape[:2]
    if c % num_groups:
        raise ValueError(f"Expected number of channels in input to be divisible by "
                         f"num_groups, but got input of shape {list(input.shape)} and "
                         f"num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    out = ((x - mean) / np.sqrt(var + eps)).reshape(input.shape)
    channel_shape = (1, c) + (1,) * (input.ndim - 2)
    return _affine(out, weight, bias, channel_shape).astype(input.dtype, copy=False)


@primitive
def batch_norm(input: np.ndarray, running_mean: np.ndarray | None,
               running_var: np.ndarray | None, weight: np.ndarray | None = None,
               bias: np.ndarray | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> np.ndarray:
    """Normalise (N, C, *) per channel C: with the running statistics, or when ``training``
    with the batch's, then updating the running statistics in place (unbiased variance)
    as ``torch.nn.functional.batch_norm`` does.

    Raises:
        ValueError: running statistics missing while not training.

    >>> batch_norm(np.array([[2.0]], np.float32), np.array([1.0], np.float32),
    ...            np.array([4.0], np.float32), eps=0.0).tolist()
    [[0.5]]
    """
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if training:
        axes = (0, *range(2, input.ndim))
        mean = input.mean(axis=axes)
        var = np.square(input - mean.reshape(shape)).mean(axis=axes)
        count = input.size // input.shape[1]
        if running_mean is not None:
            running_mean[...] = (1 - momentum) * running_mean + momentum * mean
        if running_var is not None:
            unbiased = var * count / max(count - 1, 1)
            running_var[...] = (1 - momentum) * running_var + momentum * unbiased
    elif running_mean is None or running_var is None:
        raise ValueError("batch_norm outside training needs running_mean and running_var")
    else:
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return _affine(out, weight, bias, shape).astype(input.dtype, copy=False)


def instance_norm(input: np.ndarray, running_mean: np.ndarray | None = None,
                  running_var: np.ndarray | None = None, weight: np.ndarray | None = None,
                  bias: np.ndarray | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> np.ndarray:
    """Normalise each channel of each sample over its spatial positions (a ``group_norm``
    with one group per channel), or with running statistics (a ``batch_norm``).

    >>> instance_norm(np.array([[[1.0, 3.0]]], np.float32), eps=0.0).tolist()
    [[[-1.0, 1.0]]]
    """
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    return group_norm(input, input.shape[1], weight, bias, eps)


def rms_norm(input: np.ndarray, normalized_shape: Sequence[int],
             weight: np.ndarray | None = None, eps: float | None = None) -> np.ndarray:
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` axes,
    as torch's ``rms_norm`` (``eps`` None is the dtype's machine epsilon).

    Raises:
        ValueError: the input's trailing shape is not ``normalized_shape``.

    >>> rms_norm(np.array([[1.0, 7.0]], np.float32), (2,), eps=0.0).tolist()
    [[0.20000000298023224, 1.399999976158142]]
    """
    shape = tuple(normalized_shape)
    if tuple(input.shape[len(input.shape) - len(shape):]) != shape:
        raise ValueError(f"rms_norm: input shape {tuple(input.shape)} does not end with "
                         f"normalized_shape {shape}")
    if eps is None:
        eps = float(np.finfo(np.float32).eps)
    axes = tuple(range(len(input.shape) - len(shape), len(input.shape)))
    out = input * rsqrt(mean(input * input, axes, keepdim=True) + eps)
    return out if weight is None else out * weight
