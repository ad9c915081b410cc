"""The spatial window of ONNX convolutions and pools: ``kernel_shape``, ``strides``,
``dilations`` and ``pads`` / ``auto_pad`` resolved (``Window``), and 1-D inputs seen as 2-D
ones over a height-1 image (``planar`` / ``unplanar``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nn import functional as F

from .node import OnnxNode


@dataclass
class Window:
    """A convolution or pooling window over the spatial axes: ONNX attributes resolved."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    pads: list[tuple[int, int]]

    @classmethod
    def of(cls, n: OnnxNode, kernel: list[int]) -> Window:
        """``kernel_shape``, ``strides``, ``dilations`` and ``pads`` / ``auto_pad`` of ``n``.

        Raises:
            CompileError: ``auto_pad`` SAME_* over a symbolic spatial size.
        """
        k = len(kernel)
        strides = list(n.attr("strides") or [1] * k)
        dilations = list(n.attr("dilations") or [1] * k)
        auto = n.attr("auto_pad", "NOTSET")
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            pads = []
            for size, kk, s, d in zip(n.input(0).shape[2:], kernel, strides, dilations):
                if not isinstance(size, int):
                    raise n.error(f"auto_pad={auto} needs static spatial sizes, got {size!r}")
                total = max((-(-size // s) - 1) * s + (kk - 1) * d + 1 - size, 0)
                low, high = total // 2, total - total // 2
                pads.append((low, high) if auto == "SAME_UPPER" else (high, low))
        else:
            flat = n.attr("pads") if auto == "NOTSET" and n.attr("pads") else [0] * 2 * k
            pads = list(zip(flat[:k], flat[k:]))
        return cls(list(kernel), strides, dilations, pads)

    def planar(self) -> Window:
        """The same window over a 2-D image (a 1-D window gets a height-1 axis; 2-D and 3-D
        ones stay)."""
        if len(self.kernel) != 1:
            return self
        return Window([1] + self.kernel, [1] + self.strides, [1] + self.dilations,
                       [(0, 0)] + self.pads)

    @property
    def symmetric(self) -> bool:
        """Whether every axis pads as much before as after."""
        return all(low == high for low, high in self.pads)

    def padding(self) -> tuple[int, ...]:
        """The padding before each axis (all of it, when ``symmetric``)."""
        return tuple(low for low, _ in self.pads)

    def torch_pad(self) -> list[int]:
        """``pads`` as ``F.pad`` amounts (last axis first)."""
        return [amount for low, high in reversed(self.pads) for amount in (low, high)]


def spatial_rank(n: OnnxNode) -> int:
    """The number of spatial axes of ``n``'s input 0 (after batch and channels).

    Raises:
        CompileError: other than 1, 2 or 3.
    """
    spatial = n.rank() - 2
    if spatial not in (1, 2, 3):
        raise n.error(f"only 1-D, 2-D and 3-D {n.op_type} are supported, got a "
                      f"rank-{n.rank()} input {list(n.input(0).shape)}")
    return spatial


def planar(x: Any) -> Any:
    """(N, C, L) as (N, C, 1, L); 4-D and 5-D input unchanged."""
    return F.reshape(x, (*x.shape[:2], 1, x.shape[2])) if len(x.shape) == 3 else x


def unplanar(y: Any, spatial: int) -> Any:
    """``planar``'s inverse on a result: (N, C, 1, L) as (N, C, L) when ``spatial`` is 1."""
    return F.reshape(y, (*y.shape[:2], y.shape[3])) if spatial == 1 else y
