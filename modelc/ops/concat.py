"""concat: tensors joined along an existing axis ``dim``."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from . import OpDef
from ._shapes import axis, require_static


class Concat(OpDef):
    name = "concat"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        first = shapes[0]
        dim = axis(attrs.get("dim", 0), len(first))
        for shape in shapes:
            require_static(shape, (dim,), self.name)
            if len(shape) != len(first) or any(a != b for i, (a, b) in
                                               enumerate(zip(shape, first)) if i != dim):
                raise CompileError(f"concat: shapes {[list(s) for s in shapes]} differ "
                                   f"outside dim {dim}")
        total = sum(s[dim] for s in shapes)
        return [(first[:dim] + (total,) + first[dim + 1:], dtypes[0])]


OP = Concat()
