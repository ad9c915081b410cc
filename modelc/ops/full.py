"""full: a tensor of a (possibly symbolic) shape holding one value, lowered to a copy from
one placed element with strides 0."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CompileError
from . import OpDef
from ._movement import fill

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Full(OpDef):
    name = "full"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        size = tuple(attrs["size"])
        if not all(isinstance(d, str) or (isinstance(d, int) and d >= 0) for d in size):
            raise CompileError(f"full: size must hold non-negative ints and dim names, got "
                               f"{list(size)}")
        return [(size, np.dtype(attrs.get("dtype", np.float32)).name)]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        fill(ctx, node.output, node.attrs["fill_value"])


OP = Full()
