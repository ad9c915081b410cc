"""where: ``input`` where ``condition`` is true, else ``other``, with broadcasting."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from ._families import Binary
from ._shapes import broadcast


class Where(Binary):
    name = "where"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        if dtypes[0] != "bool":
            raise CompileError(f"where: condition must be bool, got {dtypes[0]}")
        values = [d for d in dtypes[1:]] or ["float32"]
        return [(broadcast(*shapes), values[0])]


OP = Where()
