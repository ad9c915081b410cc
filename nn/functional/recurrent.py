"""Recurrences over time: ``lstm``, ``gru`` and ``rnn``, one direction of one layer each.

Each primitive takes ``gates``, the input projection of every step at once, (T, B, G * H)
= ``linear(input, weight_ih, bias)``, so the per-step work left is the recurrent product
``h @ weight_hh.T`` and the gate math; gates are in torch's order (LSTM: i, f, g, o; GRU:
r, z, n). ``lengths`` (B,) gives each sequence's length as ONNX's ``sequence_lens``: a
sequence runs over its first ``lengths[b]`` steps (backwards from ``lengths[b] - 1`` when
``reverse``), its outputs past its end are 0 and its final state is the one at its last
valid step. Each returns ``(y, h_n[, c_n])`` with ``y`` (T, B, H) and states (B, H).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._dispatch import primitive
from .quantized import dynamic_quantize_linear

__all__ = ["gru", "lstm", "lstm_step", "rnn"]

Cell = Callable[[np.ndarray, np.ndarray, list[np.ndarray]], list[np.ndarray]]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # NOTE: the tanh form never overflows, unlike 1 / (1 + exp(-x)).
    return np.float32(0.5) * (np.tanh(np.float32(0.5) * x) + np.float32(1))


def _state(state: np.ndarray | None, like: np.ndarray, hidden: int) -> np.ndarray:
    if state is None:
        return np.zeros((like.shape[1], hidden), np.float32)
    return np.asarray(state, np.float32)


def _scan(gates: np.ndarray, weight_hh: np.ndarray, states: list[np.ndarray],
          lengths: np.ndarray | None, reverse: bool, cell: Cell) -> tuple[np.ndarray, ...]:
    """Run ``cell(gates_t, h @ weight_hh.T, states) -> new states`` (states[0] is h) over
    time with ``lengths`` and ``reverse`` as the module docstring says."""
    steps, batch = gates.shape[:2]
    hidden = weight_hh.shape[1]
    if lengths is None:
        lengths = np.full(batch, steps)
    lengths = np.asarray(lengths).astype(np.int64)
    if lengths.shape != (batch,) or (lengths < 0).any() or (lengths > steps).any():
        raise ValueError(f"lengths must be (batch,) = ({batch},) values in [0, {steps}], got "
                         f"{lengths.tolist()}")
    rows = np.arange(batch)
    y = np.zeros((steps, batch, hidden), np.float32)
    for step in range(steps):
        active = step < lengths
        time = np.clip(lengths - 1 - step if reverse else np.full(batch, step), 0, steps - 1)
        recurrent = states[0] @ weight_hh.T
        new = cell(gates[time, rows], recurrent, states)
        states = [np.where(active[:, None], n, s).astype(np.float32)
                  for n, s in zip(new, states)]
        y[time[active], rows[active]] = states[0][active]
    return (y, *states)


def _lstm_update(gates: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The new (h, c) of an LSTM from its (B, 4H) pre-activations i, f, g, o and old c."""
    i, f, g, o = np.split(gates, 4, axis=1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


@primitive
def lstm_step(gates: np.ndarray, c: np.ndarray, quantize: bool = False) -> tuple[np.ndarray, ...]:
    """One step of an unrolled LSTM whose recurrent product is already in ``gates``:
    ``i, f, g, o = gates`` (B, 4H), ``c = sigmoid(f) c + sigmoid(i) tanh(g)``, ``h =
    sigmoid(o) tanh(c)``; returns ``(h, c)``, then with ``quantize`` also
    ``dynamic_quantize_linear(h)`` (the next step's input to its integer product).

    Raises:
        ValueError: ``gates`` is not (B, 4H) for ``c`` (B, H).

    >>> h, c, q, scale, zero = lstm_step(np.zeros((1, 8), np.float32),
    ...                                  np.ones((1, 2), np.float32), quantize=True)
    >>> c, zero
    (array([[0.5, 0.5]], dtype=float32), array(0, dtype=uint8))
    """
    gates, c = np.asarray(gates, np.float32), np.asarray(c, np.float32)
    if gates.ndim != 2 or c.ndim != 2 or gates.shape != (c.shape[0], 4 * c.shape[1]):
        raise ValueError(f"lstm_step expects gates (B, 4H) and c (B, H), got "
                         f"{list(gates.shape)} and {list(c.shape)}")
    h, c = _lstm_update(gates, c)
    h, c = h.astype(np.float32), c.astype(np.float32)
    return (h, c, *dynamic_quantize_linear(h)) if quantize else (h, c)


@primitive
def lstm(gates: np.ndarray, weight_hh: np.ndarray, h0: np.ndarray | None = None,
         c0: np.ndarray | None = None, lengths: np.ndarray | None = None,
         reverse: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One LSTM direction: ``gates`` (T, B, 4H) holds ``x W_ih.T + b_ih + b_hh``; each step
    ``i, f, g, o = gates[t] + h W_hh.T``, ``c = sigmoid(f) c + sigmoid(i) tanh(g)``,
    ``h = sigmoid(o) tanh(c)``. Zero initial states when ``h0``/``c0`` are None.

    Raises:
        ValueError: ``lengths`` is not (B,) values in [0, T].

    >>> y, h, c = lstm(np.zeros((5, 2, 12), np.float32), np.zeros((12, 3), np.float32))
    >>> y.shape, h.shape, c.shape
    ((5, 2, 3), (2, 3), (2, 3))
    """
    hidden = weight_hh.shape[1]

    def cell(x: np.ndarray, r: np.ndarray, states: list[np.ndarray]) -> list[np.ndarray]:
        return list(_lstm_update(x + r, states[1]))

    y, h, c = _scan(gates, weight_hh, [_state(h0, gates, hidden), _state(c0, gates, hidden)],
                    lengths, reverse, cell)
    return y, h, c


@primitive
def gru(gates: np.ndarray, weight_hh: np.ndarray, bias_hh: np.ndarray | None = None,
        h0: np.ndarray | None = None, lengths: np.ndarray | None = None,
        reverse: bool = False, linear_before_reset: bool = True
        ) -> tuple[np.ndarray, np.ndarray]:
    """One GRU direction: ``gates`` (T, B, 3H) holds ``x W_ih.T + b_ih``; each step
    ``r = sigmoid(x_r + h W_hr.T + b_hr)``, ``z`` likewise, ``n = tanh(x_n + r (h W_hn.T +
    b_hn))`` (torch's, ONNX ``linear_before_reset=1``) or ``tanh(x_n + (r h) W_hn.T + b_hn)``
    (``linear_before_reset=False``), ``h = (1 - z) n + z h``.

    Raises:
        ValueError: ``lengths`` is not (B,) values in [0, T].

    >>> y, h = gru(np.zeros((5, 2, 9), np.float32), np.zeros((9, 3), np.float32))
    >>> y.shape, h.shape
    ((5, 2, 3), (2, 3))
    """
    hidden = weight_hh.shape[1]
    bias = np.zeros(3 * hidden, np.float32) if bias_hh is None else bias_hh

    def cell(x: np.ndarray, rec: np.ndarray, states: list[np.ndarray]) -> list[np.ndarray]:
        h = states[0]
        rec = rec + bias
        r = _sigmoid(x[:, :hidden] + rec[:, :hidden])
        z = _sigmoid(x[:, hidden:2 * hidden] + rec[:, hidden:2 * hidden])
        if linear_before_reset:
            n = np.tanh(x[:, 2 * hidden:] + r * rec[:, 2 * hidden:])
        else:
            n = np.tanh(x[:, 2 * hidden:] + (r * h) @ weight_hh[2 * hidden:].T
                        + bias[2 * hidden:])
        return [(1 - z) * n + z * h]

    y, h = _scan(gates, weight_hh, [_state(h0, gates, hidden)], lengths, reverse, cell)
    return y, h


@primitive
def rnn(gates: np.ndarray, weight_hh: np.ndarray, h0: np.ndarray | None = None,
        lengths: np.ndarray | None = None, reverse: bool = False,
        nonlinearity: str = "tanh") -> tuple[np.ndarray, np.ndarray]:
    """One Elman RNN direction: ``gates`` (T, B, H) holds ``x W_ih.T + b_ih + b_hh``; each
    step ``h = act(gates[t] + h W_hh.T)`` with ``act`` ``tanh`` or ``relu``.

    Raises:
        ValueError: an unknown ``nonlinearity``, or ``lengths`` not (B,) values in [0, T].

    >>> y, h = rnn(np.zeros((5, 2, 3), np.float32), np.zeros((3, 3), np.float32))
    >>> y.shape, h.shape
    ((5, 2, 3), (2, 3))
    """
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"unknown nonlinearity {nonlinearity!r}; expected 'tanh' or 'relu'")
    act = np.tanh if nonlinearity == "tanh" else (lambda v: np.maximum(v, np.float32(0)))
    hidden = weight_hh.shape[1]
    y, h = _scan(gates, weight_hh, [_state(h0, gates, hidden)], lengths, reverse,
                 lambda x, rec, states: [act(x + rec)])
    return y, h
