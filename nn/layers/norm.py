"""Normalisation layers: ``BatchNorm1d``/``2d``, ``InstanceNorm2d``, ``LayerNorm``,
``GroupNorm``, with torch's parameters, buffers (``num_batches_tracked`` included) and
train/eval behaviour."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import functional as F
from ..module import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "GroupNorm", "InstanceNorm2d", "LayerNorm"]


def _register_affine(module: Module, shape: tuple[int, ...], affine: bool, bias: bool,
                     dtype: Any) -> None:
    """``weight`` (ones) and ``bias`` (zeros) of ``shape``, or None, in torch's order."""
    if affine:
        module.weight = Parameter(np.ones(shape, dtype))
        if bias:
            module.bias = Parameter(np.zeros(shape, dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


class _NormBase(Module):
    """Per-channel affine parameters and running statistics shared by batch/instance norm."""

    _accepted_ndims: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        dtype = dtype or np.float32
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _register_affine(self, (num_features,), affine, bias, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, dtype))
            self.register_buffer("running_var", np.ones(num_features, dtype))
            self.register_buffer("num_batches_tracked", np.array(0, dtype=np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def _check_input_dim(self, input: Any) -> None:
        if input.ndim not in self._accepted_ndims:
            wanted = " or ".join(f"{n}D" for n in self._accepted_ndims)
            raise ValueError(f"expected {wanted} input (got {input.ndim}D input)")

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input: Any) -> Any:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked += 1
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        keep_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep_running else None,
                            self.running_var if keep_running else None, self.weight,
                            self.bias, use_batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L); eval uses the running statistics.

    >>> BatchNorm1d(3).eval()(np.ones((2, 3), np.float32)).shape
    (2, 3)
    """

    _accepted_ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W); eval uses the running statistics.

    >>> BatchNorm2d(3).eval()(np.ones((2, 3, 4, 4), np.float32)).shape
    (2, 3, 4, 4)
    """

    _accepted_ndims = (4,)


class InstanceNorm2d(_NormBase):
    """Per-sample, per-channel normalisation over (N, C, H, W) or unbatched (C, H, W).

    With ``track_running_stats`` eval uses the running statistics; training does not
    update them here (torch would).

    >>> InstanceNorm2d(3)(np.ones((3, 4, 4), np.float32)).shape
    (3, 4, 4)
    """

    _accepted_ndims = (3, 4)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype=dtype,
                         bias=bias)

    def forward(self, input: Any) -> Any:
        self._check_input_dim(input)
        batched = input.ndim == 4
        x = input if batched else F.unsqueeze(input, 0)  # (N, C, H, W)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.1 if self.momentum is None else self.momentum, self.eps)
        return out if batched else F.squeeze(out, 0)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` axes, then scale and shift.

    >>> LayerNorm(4)(np.ones((2, 4), np.float32)).shape
    (2, 4)
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        shape = ((normalized_shape,) if isinstance(normalized_shape, int)
                 else tuple(normalized_shape))
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, shape, elementwise_affine, bias, dtype or np.float32)

    def forward(self, input: Any) -> Any:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalise ``num_groups`` channel groups of (N, C, *), then scale and shift.

    Raises:
        ValueError: ``num_channels`` is not divisible by ``num_groups``.

    >>> GroupNorm(2, 4)(np.ones((1, 4, 3, 3), np.float32)).shape
    (1, 4, 3, 3)
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        _register_affine(self, (num_channels,), affine, bias, dtype or np.float32)

    def forward(self, input: Any) -> Any:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
