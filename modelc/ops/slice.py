"""slice: ``input[..., start:end:step, ...]`` on axis ``dim`` (Python bounds)."""

from __future__ import annotations

from typing import Any

from . import OpDef
from ._shapes import axis, require_static


class Slice(OpDef):
    name = "slice"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = shapes[0]
        dim = axis(attrs["dim"], len(shape))
        require_static(shape, (dim,), self.name)
        length = len(range(shape[dim])[attrs.get("start"):attrs.get("end"):attrs.get("step", 1)])
        return [(shape[:dim] + (length,) + shape[dim + 1:], dtypes[0])]


OP = Slice()
