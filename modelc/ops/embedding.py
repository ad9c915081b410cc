"""embedding: rows of ``weight`` gathered by integer indices: ``input.shape + (dim,)``.

Lowered to ``f32_gather``, which traps on an index outside the table instead of reading
whatever memory lies beyond it. It copies rows as bytes (``memory.copy``), so a quantized
(int8 / uint8) table whose rows are a whole number of 4-byte words gathers through it too,
each row as ``dim / 4`` words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
        named = dict(zip(node.input_names, node.inputs))
        indices, table = named["input"], named["weight"]
        rows, dim = table.shape
        words = dim // 4 if table.dtype in ("int8", "uint8") and isinstance(dim, int) \
            and dim % 4 == 0 else dim
        if indices.dtype != "int64" or table.dtype != "float32" and words == dim:
            raise CompileError(f"embedding lowers int64 indices into a float32 table (or an "
                               f"int8/uint8 one of rows a multiple of 4 wide), got "
                               f"{indices.dtype} indices and a {table.dtype} table of "
                               f"shape {list(table.shape)}")
        if not isinstance(rows, int) or not isinstance(dim, int):
            raise CompileError(f"embedding table shape {list(table.shape)} must be fixed")
        ctx.address(table)
        ctx.address(indices)
        ctx.address(node.output)
        ctx.numel(indices.shape)
        ctx.push(rows)
        ctx.push(words)
        ctx.call("f32_gather")


OP = Embedding()
