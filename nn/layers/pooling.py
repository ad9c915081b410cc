"""Pooling layers: ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``."""

from __future__ import annotations

from typing import Any

from .. import functional as F
from ..module import Module

__all__ = ["AdaptiveAvgPool2d", "AvgPool2d", "MaxPool2d"]


class MaxPool2d(Module):
    """Max over ``kernel_size`` windows; ``stride`` defaults to ``kernel_size``.

    Raises:
        ValueError: ``return_indices=True`` (indices are for unpooling in training).

    >>> import numpy as np
    >>> MaxPool2d(2)(np.ones((1, 1, 4, 4), np.float32)).shape
    (1, 1, 2, 2)
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        if return_indices:
            raise ValueError("MaxPool2d(return_indices=True) is not supported by nn")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Any) -> Any:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Mean over ``kernel_size`` windows, with torch's padding and divisor rules.

    >>> import numpy as np
    >>> AvgPool2d(2)(np.ones((1, 1, 4, 4), np.float32)).shape
    (1, 1, 2, 2)
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Any) -> Any:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Mean pooling to a fixed ``output_size`` whatever the input size.

    >>> import numpy as np
    >>> AdaptiveAvgPool2d((1, 1))(np.ones((2, 3, 7, 5), np.float32)).shape
    (2, 3, 1, 1)
    """

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Any) -> Any:
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
