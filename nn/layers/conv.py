"""Convolution layers: ``Conv1d``, ``Conv2d``, ``ConvTranspose2d`` with torch's arguments,
attribute forms (tuples), parameter shapes, initialisation and reprs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import functional as F
from .. import init
from ..module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value: Any, n: int) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _ConvNd(Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple[int, ...],
                 stride: tuple[int, ...], padding: tuple[int, ...] | str,
                 dilation: tuple[int, ...], transposed: bool, output_padding: tuple[int, ...],
                 groups: int, bias: bool, padding_mode: str, dtype: Any) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.transposed = dilation, transposed
        self.output_padding, self.groups, self.padding_mode = output_padding, groups, padding_mode
        self._reversed_padding_repeated_twice = self._explicit_padding()
        shape = ((in_channels, out_channels // groups) if transposed
                 else (out_channels, in_channels // groups)) + kernel_size
        self.weight = Parameter(np.empty(shape, dtype or np.float32))
        if bias:
            self.bias = Parameter(np.empty(out_channels, dtype or np.float32))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _explicit_padding(self) -> list[int]:
        """``F.pad`` amounts, last axis first, for a non-zero ``padding_mode``."""
        amounts: list[int] = []
        for k, d, p in reversed(list(zip(self.kernel_size, self.dilation,
                                         _ntuple(self.padding, len(self.kernel_size))))):
            if self.padding == "same":
                total = d * (k - 1)
                amounts += [total // 2, total - total // 2]
            elif self.padding == "valid":
                amounts += [0, 0]
            else:
                amounts += [p, p]
        return amounts

    def reset_parameters(self) -> None:
        """torch's default: kaiming-uniform weight, bias from U(±1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * int(np.prod(self.kernel_size))
            bound = 1 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _padded(self, input: Any) -> tuple[Any, tuple[int, ...] | str]:
        """The input and the padding the functional op should apply."""
        if self.padding_mode == "zeros":
            return input, self.padding
        return (F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                (0,) * len(self.kernel_size))


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L): weight (out, in / groups, k).

    >>> Conv1d(2, 3, 3, padding="same")(np.ones((1, 2, 5), np.float32)).shape
    (1, 3, 5)
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, 1),
                         _ntuple(stride, 1), padding if isinstance(padding, str)
                         else _ntuple(padding, 1), _ntuple(dilation, 1), False, (0,), groups,
                         bias, padding_mode, dtype)

    def forward(self, input: Any) -> Any:
        input, padding = self._padded(input)
        return F.conv1d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W): weight (out, in / groups, kH, kW).

    >>> Conv2d(2, 3, 3, stride=2, padding=1)(np.ones((1, 2, 8, 8), np.float32)).shape
    (1, 3, 4, 4)
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, 2),
                         _ntuple(stride, 2), padding if isinstance(padding, str)
                         else _ntuple(padding, 2), _ntuple(dilation, 2), False, (0, 0), groups,
                         bias, padding_mode, dtype)

    def forward(self, input: Any) -> Any:
        input, padding = self._padded(input)
        return F.conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class ConvTranspose2d(_ConvNd):
    """2-D transposed convolution: weight (in, out / groups, kH, kW).

    >>> ConvTranspose2d(2, 3, 2, stride=2)(np.ones((1, 2, 4, 4), np.float32)).shape
    (1, 3, 8, 8)
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, 2),
                         _ntuple(stride, 2), _ntuple(padding, 2), _ntuple(dilation, 2), True,
                         _ntuple(output_padding, 2), groups, bias, padding_mode, dtype)

    def _output_padding(self, input: Any, output_size: Sequence[int] | None) -> tuple[int, ...]:
        if output_size is None:
            return self.output_padding
        wanted = tuple(output_size)[-2:]
        padding = []
        for axis, size in enumerate(wanted):
            smallest = ((input.shape[2 + axis] - 1) * self.stride[axis]
                        - 2 * self.padding[axis]
                        + self.dilation[axis] * (self.kernel_size[axis] - 1) + 1)
            if not smallest <= size < smallest + self.stride[axis]:
                raise ValueError(f"requested an output size of {list(wanted)}, but valid "
                                 f"sizes for axis {axis} range from {smallest} to "
                                 f"{smallest + self.stride[axis] - 1}")
            padding.append(size - smallest)
        return tuple(padding)

    def forward(self, input: Any, output_size: Sequence[int] | None = None) -> Any:
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)
