"""cast: elementwise conversion to ``dtype``.

Lowered between every pair of the ABI's element dtypes (float32, int64, int32, int16,
uint16, int8, uint8, bool) by the cast kernels, whose rows say what each element becomes
(onnxruntime's and numpy's rules: integers wrap to their low bits; float -> int32 / int64
truncates and saturates, float -> a narrower integer goes through int32), and to its own
dtype as a copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from wasm_kernels import abi
from wasm_kernels.kernel_spec import ELEMENTS

from ..errors import CompileError
from . import OpDef
from ._strided import copy, dense_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node

KERNELS: dict[tuple[str, str], str] = {
    (spec.dtypes[0], spec.dtypes[1]): spec.name for spec in abi.KERNELS if spec.family == "cast"}
"""Every (source, target) dtype pair with a cast kernel."""


class Cast(OpDef):
    name = "cast"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        return [(shapes[0], str(np.dtype(attrs["dtype"])))]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source, target = node.inputs[0], node.output
        if source.dtype == target.dtype and source.dtype in ELEMENTS:
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
