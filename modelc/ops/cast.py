"""cast: elementwise conversion to ``dtype``.

Lowered between float32, int32, int64 and bool by the cast kernels (float -> int truncates
and saturates; int64 -> int32 wraps, as numpy does), and to its own dtype as a copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from wasm_kernels import abi

from ..errors import CompileError
from . import OpDef
from ._strided import WORDS, copy, dense_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node

_SHORT = {"float32": "f32", "int32": "i32", "int64": "i64", "bool": "bool"}
KERNELS: dict[tuple[str, str], str] = {
    (source, target): f"{_SHORT[source]}_to_{_SHORT[target]}"
    for source in _SHORT for target in _SHORT
    if f"{_SHORT[source]}_to_{_SHORT[target]}" in abi.BY_NAME
}
"""Every (source, target) dtype pair with a cast kernel."""


class Cast(OpDef):
    name = "cast"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        return [(shapes[0], str(np.dtype(attrs["dtype"])))]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source, target = node.inputs[0], node.output
        if source.dtype == target.dtype and source.dtype in WORDS:
            copy(ctx, source, target, dense_strides(target.shape))
            return
        kernel = KERNELS.get((source.dtype, target.dtype))
        if kernel is None:
            raise CompileError(f"cast {source.dtype} -> {target.dtype} is not lowered; "
                               f"available: {sorted(f'{a} -> {b}' for a, b in KERNELS)}")
        ctx.address(source)
        ctx.address(target)
        ctx.numel(source.shape)
        ctx.call(kernel)


OP = Cast()
