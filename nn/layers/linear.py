"""Layers with PyTorch's constructor signatures, parameter names and shapes."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Iterator

import numpy as np

from . import functional as F
from .module import Module, Parameter


def _uniform(shape: tuple[int, ...], bound: float) -> Parameter:
    rng = np.random.default_rng()
    return Parameter(rng.uniform(-bound, bound, size=shape).astype(np.float32))


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: Any = np.float32) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(_uniform((out_features, in_features), bound).astype(dtype))
        if bias:
            self.bias = Parameter(_uniform((out_features,), bound).astype(dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Any) -> Any:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class ReLU(Module):
    """Elementwise ``max(x, 0)``."""

    def forward(self, input: Any) -> Any:
        return F.relu(input)


class Sequential(Module):
    """Children called in order; ``Sequential(a, b)`` names them ``"0"``, ``"1"``."""

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index: int) -> Module:
        return list(self._modules.values())[index]

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input
