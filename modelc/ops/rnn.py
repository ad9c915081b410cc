"""rnn: one Elman RNN direction (tanh or relu) over the projected inputs of every step
(``nn.functional.rnn``), lowered to a loop over time of the recurrent gemm and
``f32_rnn_<nonlinearity>_cell``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._recurrent import Recurrence

if TYPE_CHECKING:
    from ..graph import Node


class Rnn(Recurrence):
    name = "rnn"

    def cell(self, node: Node) -> str:
        return f"f32_rnn_{node.attrs.get('nonlinearity', 'tanh')}_cell"


OP = Rnn()
