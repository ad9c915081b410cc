"""lstm: one LSTM direction over the projected inputs of every step (``nn.functional.lstm``),
lowered to a loop over time of the recurrent gemm and the ``lstm_cell`` kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wasm_kernels import abi

from ._recurrent import Recurrence

if TYPE_CHECKING:
    from ..graph import Node


class Lstm(Recurrence):
    name = "lstm"
    gates = 4
    states = ("h0", "c0")

    def cell(self, node: Node) -> str:
        return abi.find("recurrent", "lstm_cell").name


OP = Lstm()
