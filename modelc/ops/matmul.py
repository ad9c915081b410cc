"""matmul: numpy's matrix product with broadcast batch dims (1-D operands promoted)."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from . import OpDef
from ._shapes import broadcast


class Matmul(OpDef):
    name = "matmul"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        a, b = shapes
        if not a or not b:
            raise CompileError("matmul needs operands of rank >= 1")
        a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
        b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
        if a2[-1] != b2[-2]:
            raise CompileError(f"matmul: inner dims differ: {list(a)} @ {list(b)}")
        out = broadcast(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
        if len(a) == 1:
            out = out[:-2] + out[-1:]
        if len(b) == 1:
            out = out[:-1]
        return [(out, dtypes[0])]


OP = Matmul()
