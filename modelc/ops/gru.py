"""gru: one GRU direction over the projected inputs of every step (``nn.functional.gru``),
lowered to a loop over time. torch's reset (``linear_before_reset``): the recurrent gemm with
``bias_hh`` and the ``gru_cell`` kernel. ONNX's default reset of h before its product: per
step the gemm of the r and z rows, ``gru_reset`` (r h), the gemm of the n rows on r h, and
``gru_update``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from wasm_kernels import abi

from ..errors import CompileError
from ._recurrent import Push, Recurrence, panels_scratch, recurrent_gemm

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape, Value


def _reset_first(node: Node) -> bool:
    return not node.attrs.get("linear_before_reset", True)


class Gru(Recurrence):
    name = "gru"
    gates = 3
    recurrent_bias = "bias_hh"

    def cell(self, node: Node) -> str:
        return abi.find("recurrent", "gru_cell").name

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        """torch's reset: the recurrent product (B, 3H); ONNX's default: that of the r and z
        rows (B, 2H), r h (B, H) and the product of the n rows on it (B, H)."""
        if not _reset_first(node):
            return super().scratch(node)
        batch, hidden = node.inputs[0].shape[1], node.inputs[1].shape[1]
        return ((batch, 2 * hidden), (batch, hidden), (batch, hidden), panels_scratch(node))

    def step(self, node: Node, named: dict[str, Value], ctx: LowerContext,
             counter: tuple[int, int]) -> None:
        if not _reset_first(node):
            super().step(node, named, ctx, counter)
            return
        weight = np.asarray(named["weight_hh"].data, np.float32)
        hidden = weight.shape[1]
        bias = named.get("bias_hh")
        if bias is not None and not bias.is_constant:
            raise CompileError("gru with linear_before_reset=False needs bias_hh known at "
                               "compile time (it is split between the two products)")
        split = None if bias is None else np.asarray(bias.data, np.float32)
        y, h = node.outputs

        def scratch(k: int) -> None:
            ctx.scratch(node, k)

        def bias_rows(rows: slice) -> Push | None:
            return None if split is None else lambda: ctx.constant(split[rows])

        recurrent_gemm(ctx, node, lambda: ctx.address(h), weight[:2 * hidden],
                       bias_rows(slice(0, 2 * hidden)), lambda: scratch(0), lambda: scratch(3))
        self.call_cell(ctx, node, named, counter, abi.find("recurrent", "gru_reset").name,
                       [lambda: scratch(0), lambda: ctx.address(h), lambda: scratch(1)])
        recurrent_gemm(ctx, node, lambda: scratch(1), weight[2 * hidden:],
                       bias_rows(slice(2 * hidden, None)), lambda: scratch(2),
                       lambda: scratch(3))
        self.call_cell(ctx, node, named, counter, abi.find("recurrent", "gru_update").name,
                       [lambda: scratch(0), lambda: scratch(2), lambda: ctx.address(h),
                        lambda: ctx.address(y)])


OP = Gru()
