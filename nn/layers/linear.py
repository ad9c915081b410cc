"""``Identity``, ``Linear`` (and torch's ``NonDynamicallyQuantizableLinear`` name for the
output projection of attention, so reprs match)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import functional as F
from .. import init
from ..module import Module, Parameter

__all__ = ["Identity", "Linear", "NonDynamicallyQuantizableLinear"]


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments, as torch's does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features).

    >>> Linear(3, 4)(np.ones((2, 3), np.float32)).shape
    (2, 4)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(np.empty((out_features, in_features), dtype or np.float32))
        if bias:
            self.bias = Parameter(np.empty(out_features, dtype or np.float32))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's default: kaiming-uniform weight, bias from U(±1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Any) -> Any:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under the class name torch gives attention's output projection."""
