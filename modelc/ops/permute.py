"""permute: axes reordered so that output axis i is input axis ``dims[i]``."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from . import OpDef
from ._shapes import axis


class Permute(OpDef):
    name = "permute"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = shapes[0]
        dims = [axis(d, len(shape)) for d in attrs["dims"]]
        if sorted(dims) != list(range(len(shape))):
            raise CompileError(f"permute: {list(attrs['dims'])} is not a permutation of "
                               f"{len(shape)} axes")
        return [(tuple(shape[d] for d in dims), dtypes[0])]


OP = Permute()
