"""``OnnxNode``: one ONNX node seen by an op function: its operands, attributes and opset.

An operand is a ``SymbolicTensor`` (computed at run time), an ``ndarray`` (a *known value*:
an initializer, a constant, or anything computed only from known values, which the op
functions evaluate eagerly through the same ``nn.functional`` calls), or None (an omitted
optional input). Known shape values may be ``object`` arrays holding symbolic dim names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import CompileError
from ..graph import Guard
from ..trace import SymbolicTensor

Operand = SymbolicTensor | np.ndarray
Tensor = Any
"""What op functions get: a ``SymbolicTensor`` or an ``ndarray``, both accepted by every
``nn.functional`` call (the ``__nn_function__`` protocol), which numpy stubs cannot say."""


class OnnxNode:
    """The operands and attributes of one ONNX node, with lookups that name the node in
    their errors."""

    def __init__(self, name: str, op_type: str, inputs: Sequence[Operand | None],
                 attrs: dict[str, Any], opset: int, outputs: int = 1,
                 subgraph: Callable[..., list[Any]] | None = None,
                 detached: Callable[..., tuple[Any, list[Any]]] | None = None):
        self.name = name
        self.op_type = op_type
        self.inputs = list(inputs)
        self.attrs = attrs
        self.opset = opset
        self.outputs = outputs
        self._subgraph = subgraph
        self._detached = detached

    def subgraph(self, attr: str, inputs: Sequence[Any] = (), guard: Guard = ()) -> list[Any]:
        """Import the graph attribute ``attr`` (a branch or loop body) into the same graph,
        its inputs bound to ``inputs``; returns its outputs' operands.

        Raises:
            CompileError: there is no such attribute, or the body fails to import.
        """
        body = self.attrs.get(attr)
        if body is None or self._subgraph is None:
            raise self.error(f"needs the graph attribute {attr!r}")
        return self._subgraph(body, inputs, guard)

    def detached(self, attr: str, inputs: Sequence[Any]) -> tuple[Any, list[Any]]:
        """Import the graph attribute ``attr`` as a graph of its own (a loop body): formal
        inputs are known arrays or ``(shape, dtype)`` of new graph inputs; returns the
        graph and the outer run-time tensors it reads (its last inputs, in order).

        Raises:
            CompileError: there is no such attribute, or the body fails to import.
        """
        body = self.attrs.get(attr)
        if body is None or self._detached is None:
            raise self.error(f"needs the graph attribute {attr!r}")
        return self._detached(body, inputs)

    def error(self, message: str) -> CompileError:
        return CompileError(f"ONNX node {self.name!r} ({self.op_type}): {message}")

    def has(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] is not None

    def input(self, index: int) -> Tensor:
        """Operand ``index``, which must be present.

        Raises:
            CompileError: the operand is missing.
        """
        value = self.inputs[index] if self.has(index) else None
        if value is None:
            raise self.error(f"input {index} is required")
        return value

    def optional(self, index: int) -> Tensor | None:
        return self.input(index) if self.has(index) else None

    def known(self, index: int, what: str) -> np.ndarray:
        """Operand ``index`` as a value known at import time (shape values included).

        Raises:
            CompileError: it is computed at run time.
        """
        value = self.inputs[index] if self.has(index) else None
        if not isinstance(value, np.ndarray):
            raise self.error(f"{what} (input {index}) must be known at import time (a constant "
                             "or computed from constants and shapes), got a run-time tensor")
        return value

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def ints(self, name: str, index: int, default: Sequence[int] | None = None
             ) -> list[int] | None:
        """Integers given as attribute ``name`` (older opsets) or input ``index`` (newer)."""
        if self.has(index):
            return [int(v) for v in self.known(index, name).reshape(-1)]
        value = self.attrs.get(name, default)
        return None if value is None else [int(v) for v in value]

    def scalar(self, index: int, attr: str, default: float | None) -> float | None:
        """A float given as input ``index`` (newer opsets) or attribute ``attr`` (older)."""
        if self.has(index):
            return float(self.known(index, attr).reshape(-1)[0])
        return self.attrs.get(attr, default)

    def rank(self, index: int = 0) -> int:
        return len(self.input(index).shape)

    def axis(self, value: int, rank: int | None = None) -> int:
        """``value`` normalised against the rank of input 0 (or ``rank``).

        Raises:
            CompileError: out of range.
        """
        rank = self.rank() if rank is None else rank
        if not -rank <= value < rank:
            raise self.error(f"axis {value} is out of range for rank {rank}")
        return value % rank
