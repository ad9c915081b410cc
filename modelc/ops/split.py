"""split: chunks along ``dim`` of a given size (last may be smaller) or of listed sizes."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from . import OpDef
from ._shapes import axis, require_static


class Split(OpDef):
    name = "split"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = shapes[0]
        dim = axis(attrs.get("dim", 0), len(shape))
        require_static(shape, (dim,), self.name)
        size, length = attrs["split_size_or_sections"], shape[dim]
        sizes = ([min(size, length - s) for s in range(0, length, size)]
                 if isinstance(size, int) else list(size))
        if sum(sizes) != length:
            raise CompileError(f"split: sections {sizes} do not add up to {length}")
        return [(shape[:dim] + (s,) + shape[dim + 1:], dtypes[0]) for s in sizes]


OP = Split()
