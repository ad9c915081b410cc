"""pad: pad (or crop, for negative amounts) the last ``len(pad) // 2`` axes, last first."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from . import OpDef
from ._shapes import require_static


class Pad(OpDef):
    name = "pad"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape, amounts = list(shapes[0]), list(attrs["pad"])
        if len(amounts) % 2 or len(amounts) // 2 > len(shape):
            raise CompileError(f"pad: {amounts} must hold pairs for at most {len(shape)} axes")
        for i in range(len(amounts) // 2):
            dim = len(shape) - 1 - i
            require_static(tuple(shape), (dim,), self.name)
            shape[dim] += amounts[2 * i] + amounts[2 * i + 1]
        return [(tuple(shape), dtypes[0])]


OP = Pad()
