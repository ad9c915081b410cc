"""onnxruntime's com.microsoft ``DynamicQuantizeLSTM`` (``quantize_dynamic``'s LSTM), unrolled
over its fixed number of steps.

Its products run as onnxruntime runs them: the input of every step is quantized at once
(``dynamic_quantize_linear`` over the whole (T, B, I) input, uint8) and multiplied by the
int8 ``W`` in ``qlinear``; at each step the previous hidden state is quantized the same way
and multiplied by ``R``. The rest is ONNX's LSTM cell in float32, one ``lstm_step`` per step
(which also quantizes h for the next step's product), its gates i, o, f, c reordered to
torch's i, f, g, o in the weights at compile time. ``W`` is (D, I, 4H) and ``R`` (D, H, 4H),
the transposes of LSTM's, with a scale and zero point per direction or per direction and
gate column. ``sequence_lens`` shorter than the sequence, peepholes and the attributes LSTM
refuses are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from .node import OnnxNode, Tensor
from .ops_rnn import _direction_state, _nonlinearity, _stack, gate_order


def _quantized_product(x: Tensor, weight: np.ndarray, scale: np.ndarray, zero: np.ndarray,
                       bias: np.ndarray | Tensor | None = None) -> Tensor:
    """``x @ dequantized(weight)`` (+ ``bias``) with ``x`` quantized dynamically, as
    onnxruntime's quantized LSTM gemms: ``weight`` (K, N) int8, ``scale``/``zero`` per
    tensor or per column (N,)."""
    xq, xs, xz = F.dynamic_quantize_linear(x)
    return F.qlinear(xq, xs, xz, np.ascontiguousarray(weight.T), scale, zero, bias)


def _per_direction(n: OnnxNode, index: int, name: str, d: int) -> np.ndarray:
    """Direction ``d``'s scale or zero point: a scalar, or one per gate column."""
    value = np.asarray(n.known(index, name))
    return np.asarray(value.reshape(-1)[d] if value.ndim <= 1 else value[d])


def _torch_order(columns: np.ndarray, hidden: int) -> np.ndarray:
    """``columns`` (..., 4H) with its gates in torch's order (``lstm_step``'s); a scale or
    zero point per tensor (a scalar) unchanged."""
    if columns.ndim == 0 or columns.shape[-1] != 4 * hidden:
        return columns
    return gate_order(columns, "LSTM", axis=-1)


def dynamic_quantize_lstm(n: OnnxNode) -> Any:
    """DynamicQuantizeLSTM: outputs Y (T, D, B, H), Y_h (D, B, H), Y_c (D, B, H).

    Raises:
        CompileError: the sequence length or batch is not fixed, ``sequence_lens`` cut
            a sequence short, peephole weights are given, or an attribute LSTM refuses.
    """
    direction = n.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise n.error(f"unknown direction {direction!r}; expected forward, reverse or "
                      "bidirectional")
    directions = 2 if direction == "bidirectional" else 1
    _nonlinearity(OnnxNode(n.name, "LSTM", n.inputs, n.attrs, n.opset), directions)
    x = n.input(0)
    steps, batch = x.shape[0], x.shape[1]
    if not isinstance(steps, int) or not isinstance(batch, int):
        raise n.error(f"needs a fixed sequence length and batch (it is unrolled), got "
                      f"input shape {list(x.shape)}; fix them with input_shapes")
    lengths = n.optional(4)
    if lengths is not None and not (isinstance(lengths, np.ndarray) and (lengths == steps).all()):
        raise n.error("sequence_lens shorter than the sequence are not supported")
    if n.has(7) and np.any(n.known(7, "P")):
        raise n.error("peephole weights P are not supported")
    weights, recurrents = n.known(1, "W"), n.known(2, "R")
    hidden = recurrents.shape[1]
    biases = n.known(3, "B") if n.has(3) else np.zeros((directions, 8 * hidden), np.float32)
    initial = [n.optional(5), n.optional(6)]
    results: list[list[Tensor]] = [[], [], []]
    for d in range(directions):
        w_scale, w_zero, r_scale, r_zero = (
            _torch_order(_per_direction(n, index, name, d), hidden) for index, name in
            ((8, "W_scale"), (9, "W_zero_point"), (10, "R_scale"), (11, "R_zero_point")))
        bias = biases[d, :4 * hidden] + biases[d, 4 * hidden:]
        gates_x = _quantized_product(x, _torch_order(weights[d], hidden), w_scale, w_zero,
                                     _torch_order(bias, hidden))
        recurrent = _torch_order(recurrents[d], hidden)
        h, c = (_direction_state(s, d, 0) for s in initial)
        c = np.zeros((batch, hidden), np.float32) if c is None else c
        quantized: list[Tensor] = []  # h quantized by the last step, for this one's product
        outputs: list[Tensor] = []
        rows = F.split(gates_x, 1, 0)  # one view of gates_x per step, no copy
        order = range(steps - 1, -1, -1) if direction == "reverse" or d == 1 else range(steps)
        for k, t in enumerate(order):
            gates = F.squeeze(rows[t], 0)
            if isinstance(h, np.ndarray):  # a constant initial state: its product folds
                gates = F.add(gates, _quantized_product(h, recurrent, r_scale, r_zero))
            elif h is not None:
                hq, hs, hz = quantized or F.dynamic_quantize_linear(h)
                # NOTE: one row's projected input is the product's float bias: no add node,
                # the same sums (acc * scale + bias, as the add computed them)
                product = F.qlinear(hq, hs, hz, np.ascontiguousarray(recurrent.T), r_scale,
                                    r_zero, F.reshape(gates, (4 * hidden,)) if batch == 1
                                    else None)
                gates = product if batch == 1 else F.add(gates, product)
            h, c, *quantized = F.lstm_step(gates, c, quantize=k < steps - 1)
            outputs.append(h)
        if direction == "reverse" or d == 1:
            outputs.reverse()
        for store, value in zip(results, (_stack(outputs, 0), h, c)):
            store.append(value)
    y = _stack(results[0], 1)
    return (y, *(_stack(s, 0) for s in results[1:]))[:n.outputs]
