"""ONNX recurrent layers: LSTM, GRU and RNN, each direction one ``linear`` over every step's
input and one ``nn.functional`` recurrence (``lstm``, ``gru``, ``rnn``).

ONNX stores gates as LSTM (i, o, f, c) and GRU (z, r, h); the weights (which must be known at
import time) are reordered into torch's (i, f, g, o) and (r, z, n). Directions forward,
reverse and bidirectional, ``initial_h``/``initial_c``, ``sequence_lens`` (constant or a
run-time int32 input), ``layout`` 0 and 1, GRU's ``linear_before_reset`` and RNN's Tanh or
Relu are covered; other activations, ``clip``, ``input_forget`` and peepholes are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from .node import OnnxNode, Tensor

OpFn = Callable[[OnnxNode], Any]

ORDER = {"LSTM": (0, 2, 3, 1), "GRU": (1, 0, 2), "RNN": (0,)}
"""ONNX gate blocks in torch's order: LSTM i, o, f, c -> i, f, c, o; GRU z, r, h -> r, z, h."""
ACTIVATIONS = {"LSTM": ("sigmoid", "tanh", "tanh"), "GRU": ("sigmoid", "tanh")}


def gate_order(array: np.ndarray, op_type: str, axis: int = 0) -> np.ndarray:
    """The gate blocks of ``op_type`` (a key of ``ORDER``) along ``axis`` of ``array``
    reordered from ONNX's to torch's, in ``array``'s dtype."""
    parts = np.split(np.asarray(array), len(ORDER[op_type]), axis=axis)
    return np.concatenate([parts[i] for i in ORDER[op_type]], axis=axis)


def _torch_order(n: OnnxNode, array: np.ndarray) -> np.ndarray:
    """The gate blocks along axis 0 of ``array`` in torch's order, as float32."""
    return gate_order(np.asarray(array, np.float32), n.op_type)


def _nonlinearity(n: OnnxNode, directions: int) -> str:
    """``tanh`` or ``relu`` for RNN; checks that LSTM and GRU use ONNX's defaults.

    Raises:
        CompileError: other activations, or attributes that change the cell.
    """
    for name in ("clip", "activation_alpha", "activation_beta"):
        if n.attr(name) is not None:
            raise n.error(f"attribute {name!r} is not supported")
    if n.attr("input_forget", 0):
        raise n.error("input_forget=1 (coupled input and forget gates) is not supported")
    given = [a.lower() for a in n.attr("activations") or []]
    if n.op_type == "RNN":
        kinds = set(given or ["tanh"])
        if len(kinds) != 1 or not kinds <= {"tanh", "relu"}:
            raise n.error(f"activations {given} are not supported; expected Tanh or Relu, "
                          "the same for every direction")
        return kinds.pop()
    default = list(ACTIVATIONS[n.op_type])
    if given and given != default * directions:
        raise n.error(f"activations {n.attr('activations')} are not supported; only the "
                      f"default {default} per direction")
    return "tanh"


def _direction_state(state: Tensor | None, d: int, layout: int) -> Tensor | None:
    """Direction ``d``'s (B, H) slice of an initial state (D, B, H), or (B, D, H) in layout 1."""
    if state is None:
        return None
    axis = 1 if layout else 0
    return F.squeeze(F.slice(state, axis, d, d + 1), axis)


def _lengths(n: OnnxNode, steps: Any) -> Tensor | None:
    """``sequence_lens``; None when absent or when every length is the whole sequence."""
    lengths = n.optional(4)
    if isinstance(lengths, np.ndarray) and isinstance(steps, int) and (lengths == steps).all():
        return None
    return lengths


def _stack(parts: list[Tensor], axis: int) -> Tensor:
    """The parts (each without ``axis``) stacked along a new ``axis``."""
    expanded = [F.unsqueeze(p, axis) for p in parts]
    return expanded[0] if len(expanded) == 1 else F.concat(expanded, axis)


def recurrent(n: OnnxNode) -> Any:
    """LSTM, GRU or RNN: outputs Y (T, D, B, H), Y_h (D, B, H)[, Y_c] (layout 1: (B, T, D,
    H) and (B, D, H))."""
    direction = n.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise n.error(f"unknown direction {direction!r}; expected forward, reverse or "
                      "bidirectional")
    directions = 2 if direction == "bidirectional" else 1
    nonlinearity = _nonlinearity(n, directions)
    layout = n.attr("layout", 0)
    x = n.input(0)
    if layout:
        x = F.transpose(x, 0, 1)  # (T, B, I)
    weights, recurrents = n.known(1, "W"), n.known(2, "R")
    biases = n.known(3, "B") if n.has(3) else None
    if n.op_type == "LSTM" and n.has(7) and np.any(n.known(7, "P")):
        raise n.error("peephole weights P are not supported")
    lengths = _lengths(n, x.shape[0])
    states = [n.optional(5), n.optional(6) if n.op_type == "LSTM" else None]
    results: list[list[Tensor]] = [[], [], []]
    for d in range(directions):
        reverse = direction == "reverse" or d == 1
        w, r = _torch_order(n, weights[d]), _torch_order(n, recurrents[d])
        gates_x = gates_h = bias = None
        if biases is not None:
            gates_x, gates_h = (_torch_order(n, b) for b in np.split(biases[d], 2))
            bias = gates_x + gates_h
        h0, c0 = (_direction_state(s, d, layout) for s in states)
        out: tuple[Tensor, ...]
        if n.op_type == "GRU":
            out = F.gru(F.linear(x, w, gates_x), r, gates_h, h0, lengths, reverse,
                        bool(n.attr("linear_before_reset", 0)))
        else:
            gates = F.linear(x, w, bias)
            out = (F.lstm(gates, r, h0, c0, lengths, reverse) if n.op_type == "LSTM"
                   else F.rnn(gates, r, h0, lengths, reverse, nonlinearity))
        for store, value in zip(results, out):
            store.append(value)
    y = _stack(results[0], 1)  # (T, D, B, H)
    finals = [_stack(s, 0) for s in results[1:] if s]  # (D, B, H)
    if layout:
        y = F.permute(y, (2, 0, 1, 3))  # (B, T, D, H)
        finals = [F.transpose(s, 0, 1) for s in finals]  # (B, D, H)
    return (y, *finals)[:n.outputs]


OPS: dict[str, OpFn] = {"LSTM": recurrent, "GRU": recurrent, "RNN": recurrent}
