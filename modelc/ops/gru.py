"""gru: one GRU direction over the projected inputs of every step (``nn.functional.gru``),
lowered to a loop over time of the recurrent gemm (with ``bias_hh``, which the reset gate
scales) and the ``gru_cell`` kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CompileError
from wasm_kernels import abi

from ._recurrent import Recurrence

if TYPE_CHECKING:
    from ..graph import Node


class Gru(Recurrence):
    name = "gru"
    gates = 3
    recurrent_bias = "bias_hh"

    def cell(self, node: Node) -> str:
        if not node.attrs.get("linear_before_reset", True):
            raise CompileError("gru with linear_before_reset=False (the reset gate applied "
                               "before the recurrent product, ONNX's default) has no wasm "
                               "lowering yet; torch's GRU (linear_before_reset=1) has")
        return abi.find("recurrent", "gru_cell").name


OP = Gru()
