"""adaptive_avg_pool2d: means over windows chosen to give ``output_size``."""

from __future__ import annotations

from typing import Any

from . import OpDef
from ._shapes import pair, require_static


class AdaptiveAvgPool2d(OpDef):
    name = "adaptive_avg_pool2d"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        x = shapes[0]
        require_static(x, (len(x) - 2, len(x) - 1), self.name)
        out = tuple(full if size is None else size
                    for size, full in zip(pair(attrs["output_size"]), x[-2:]))
        return [(tuple(x[:-2]) + out, dtypes[0])]


OP = AdaptiveAvgPool2d()
