"""rnn: one Elman RNN direction (tanh or relu) over the projected inputs of every step
(``nn.functional.rnn``), lowered to a loop over time of the recurrent gemm and the
``rnn_cell`` kernel with the nonlinearity as its epilogue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wasm_kernels import abi

from ._recurrent import Recurrence

if TYPE_CHECKING:
    from ..graph import Node


class Rnn(Recurrence):
    name = "rnn"

    def cell(self, node: Node) -> str:
        activation = node.attrs.get("nonlinearity", "tanh")
        return abi.find("recurrent", "rnn_cell", (activation,)).name


OP = Rnn()
