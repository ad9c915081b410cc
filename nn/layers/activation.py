"""Activation layers: thin Modules over ``nn.functional`` with torch's arguments and reprs.

``inplace`` is accepted for signature compatibility; numpy results are always new arrays.
"""

from __future__ import annotations

from typing import Any

from .. import functional as F
from ..module import Module

__all__ = ["CELU", "ELU", "GELU", "SELU", "Hardshrink", "Hardswish", "LeakyReLU", "LogSoftmax",
           "Mish", "ReLU", "ReLU6", "SiLU", "Sigmoid", "Softmax", "Softplus", "Softshrink",
           "Softsign", "Tanh"]


class _Inplace(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    """``max(x, 0)``."""

    def forward(self, input: Any) -> Any:
        return F.relu(input)


class ReLU6(_Inplace):
    """``min(max(x, 0), 6)``."""

    def forward(self, input: Any) -> Any:
        return F.relu6(input)


class SiLU(_Inplace):
    """``x * sigmoid(x)``."""

    def forward(self, input: Any) -> Any:
        return F.silu(input)


class Hardswish(Module):
    """``x * relu6(x + 3) / 6``; torch shows no ``inplace`` in its repr."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Any) -> Any:
        return F.hardswish(input)


class LeakyReLU(Module):
    """``x`` if ``x >= 0`` else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Any) -> Any:
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                          else "")


class GELU(Module):
    """Gaussian error linear unit, exact (``'none'``) or ``'tanh'``-approximated."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Any) -> Any:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``."""

    def forward(self, input: Any) -> Any:
        return F.sigmoid(input)


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, input: Any) -> Any:
        return F.tanh(input)


class _SoftmaxBase(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def _dim(self, input: Any) -> int:
        # NOTE: torch's legacy rule for dim=None: axis 0 for 0-, 1- and 3-D input, else 1.
        if self.dim is not None:
            return self.dim
        return 0 if input.ndim in (0, 1, 3) else 1

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """Softmax along ``dim``."""

    def forward(self, input: Any) -> Any:
        return F.softmax(input, self._dim(input))


class LogSoftmax(_SoftmaxBase):
    """Log-softmax along ``dim``."""

    def forward(self, input: Any) -> Any:
        return F.log_softmax(input, self._dim(input))


class ELU(Module):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Any) -> Any:
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def forward(self, input: Any) -> Any:
        return F.celu(input, self.alpha)


class SELU(_Inplace):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""

    def forward(self, input: Any) -> Any:
        return F.selu(input)


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Any) -> Any:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, input: Any) -> Any:
        return F.softsign(input)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    def forward(self, input: Any) -> Any:
        return F.mish(input)


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Any) -> Any:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """``x`` moved ``lambd`` towards 0, and 0 where ``|x| <= lambd``."""

    def forward(self, input: Any) -> Any:
        return F.softshrink(input, self.lambd)
