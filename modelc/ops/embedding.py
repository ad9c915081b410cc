"""embedding: rows of ``weight`` gathered by integer indices: ``input.shape + (dim,)``.

Lowered to ``f32_gather``, which traps on an index outside the table instead of reading
whatever memory lies beyond it. It copies rows as bytes (``memory.copy``), so a table of any
element dtype whose rows are a whole number of 4-byte words gathers through it, each row as
that many words; other rows go through ``u8_gather``, whose rows are counted in bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from wasm_kernels.kernel_spec import ELEMENTS

from ..errors import CompileError
from . import OpDef

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Embedding(OpDef):
    name = "embedding"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        if not dtypes[0].startswith(("int", "uint")):
            raise CompileError(f"embedding indices must be integers, got {dtypes[0]}")
        return [(tuple(shapes[0]) + (shapes[1][1],), dtypes[1])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        indices, table = named["input"], named["weight"]
        rows, dim = table.shape
        if indices.dtype != "int64" or table.dtype not in ELEMENTS:
            raise CompileError(f"embedding lowers int64 indices into a table of one of "
                               f"{sorted(ELEMENTS)}, got {indices.dtype} indices and a "
                               f"{table.dtype} table")
        if not isinstance(rows, int) or not isinstance(dim, int):
            raise CompileError(f"embedding table shape {list(table.shape)} must be fixed")
        row_bytes = dim * np.dtype(table.dtype).itemsize
        ctx.address(table)
        ctx.address(indices)
        ctx.address(node.output)
        ctx.numel(indices.shape)
        ctx.push(rows)
        # NOTE: rows of whole 4-byte words go through the word gather
        ctx.push(row_bytes // 4 if row_bytes % 4 == 0 else row_bytes)
        ctx.call("f32_gather" if row_bytes % 4 == 0 else "u8_gather")


OP = Embedding()
