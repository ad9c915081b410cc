"""``Upsample``, torch's resizing layer over ``F.interpolate``, and its fixed-mode forms
``UpsamplingNearest2d`` and ``UpsamplingBilinear2d`` (with aligned corners)."""

from __future__ import annotations

from typing import Any

from .. import functional as F
from ..module import Module

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]


class Upsample(Module):
    """Resize the spatial axes to ``size`` or by ``scale_factor`` (``F.interpolate``).

    Raises:
        ValueError: from ``F.interpolate`` when called (unknown mode, both or neither of
            ``size`` and ``scale_factor``...).

    >>> import numpy as np
    >>> Upsample(scale_factor=2)(np.ones((1, 1, 2, 3), np.float32)).shape
    (1, 1, 4, 6)
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None) -> None:
        super().__init__()
        self.size = size
        # NOTE: torch stores a scalar factor as a float (its repr shows 2.0).
        self.scale_factor = (float(scale_factor) if isinstance(scale_factor, (int, float))
                             else scale_factor)
        self.mode, self.align_corners = mode, align_corners

    def forward(self, input: Any) -> Any:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else \
            f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample`` in mode ``nearest``.

    >>> import numpy as np
    >>> UpsamplingNearest2d(scale_factor=2)(np.ones((1, 1, 2, 3), np.float32)).shape
    (1, 1, 4, 6)
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample`` in mode ``bilinear`` with ``align_corners=True``.

    >>> import numpy as np
    >>> UpsamplingBilinear2d(size=(3, 3))(np.ones((1, 1, 2, 2), np.float32)).shape
    (1, 1, 3, 3)
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, "bilinear", align_corners=True)
