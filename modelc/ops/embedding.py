"""embedding: rows of ``weight`` gathered by integer indices: ``input.shape + (dim,)``."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from . import OpDef


class Embedding(OpDef):
    name = "embedding"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        if not dtypes[0].startswith(("int", "uint")):
            raise CompileError(f"embedding indices must be integers, got {dtypes[0]}")
        return [(tuple(shapes[0]) + (shapes[1][1],), dtypes[1])]


OP = Embedding()
