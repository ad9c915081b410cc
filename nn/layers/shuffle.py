"""Rearranging layers: ``PixelShuffle``, ``PixelUnshuffle``, ``ChannelShuffle``."""

from __future__ import annotations

from typing import Any

from .. import functional as F
from ..module import Module

__all__ = ["ChannelShuffle", "PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """(N, C * r * r, H, W) -> (N, C, H * r, W * r).

    Raises:
        ValueError: from ``F.pixel_shuffle`` when called on a bad shape.

    >>> import numpy as np
    >>> PixelShuffle(2)(np.zeros((1, 8, 2, 3), np.float32)).shape
    (1, 2, 4, 6)
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Any) -> Any:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(N, C, H * r, W * r) -> (N, C * r * r, H, W).

    Raises:
        ValueError: from ``F.pixel_unshuffle`` when called on a bad shape.

    >>> import numpy as np
    >>> PixelUnshuffle(2)(np.zeros((1, 2, 4, 6), np.float32)).shape
    (1, 8, 2, 3)
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Any) -> Any:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Channels regrouped: channel ``g * K + k`` of ``groups * K`` moves to ``k * groups + g``.

    Raises:
        ValueError: from ``F.channel_shuffle`` when called on a bad shape.

    >>> import numpy as np
    >>> ChannelShuffle(2)(np.arange(4.0).reshape(1, 4, 1, 1)).reshape(-1).tolist()
    [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Any) -> Any:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
