"""The ABI rows of the ``recurrent`` family (issue #19): one step of a recurrent layer's gate
math over the batch after the recurrent product (the model module loops over time), and the
fused step of an unrolled LSTM; data only like ``abi``."""

from __future__ import annotations

from .kernel_spec import KernelSpec

RECURRENT_CELLS: dict[str, tuple[tuple[str, ...], int, int, str]] = {
    "lstm_cell": (("c", "h", "y"), 4, 4, (
        "i, f, g, o = x[t] + hw; c = sigmoid(f) c + sigmoid(i) tanh(g); h = sigmoid(o) "
        "tanh(c)")),
    "gru_cell": (("h", "y"), 3, 3, (
        "with hw = h @ W_hh.T + b_hh: r = sigmoid(x_r + hw_r), z = sigmoid(x_z + hw_z), n = "
        "tanh(x_n + r hw_n); h = (1 - z) n + z h (torch's GRU)")),
    "rnn_cell": (("h", "y"), 1, 1, "h = act(x[t] + hw), act the epilogue's unary op"),
    "gru_reset": (("h", "rh"), 3, 2, (
        "with hw = h @ W_hr,z.T + b_hr,z: rh = sigmoid(x_r + hw_r) h, the first half of a GRU "
        "step that resets h before its recurrent product (ONNX linear_before_reset=0)")),
    "gru_update": (("hn", "h", "y"), 3, 2, (
        "the second half of that step, with hw as for gru_reset and hn = rh @ W_hn.T + b_hn "
        "(batch, hidden): z = sigmoid(x_z + hw_z), n = tanh(x_n + hn); h = (1 - z) n + z h")),
}
"""Recurrent cell ops: (operands after x and hw, gates of x, gates of hw, what one step
computes for a row)."""
RNN_ACTIVATIONS: tuple[str, ...] = ("tanh", "relu")


def cell(op: str, epilogue: tuple[str, ...] = ()) -> KernelSpec:
    """The row of one ``RECURRENT_CELLS`` step, with an optional activation epilogue."""
    operands, x_gates, hw_gates, math = RECURRENT_CELLS[op]
    written = "h is also written to y[t, b] of y (steps, batch, hidden)" if "y" in operands \
        else "rh is (batch, hidden)"
    return KernelSpec(
        "_".join(("f32", op) + epilogue), "recurrent", op,
        ("x", "hw") + operands + ("lengths", "batch", "hidden", "step", "steps", "reverse"),
        f"one time step of a recurrent layer for each batch row b: x is (steps, batch, "
        f"{x_gates} * hidden), the input projection of every step (gates in torch's order); hw "
        f"is (batch, {hw_gates} * hidden), the recurrent product of this step; {math}; states "
        f"(batch, hidden) are updated in place and {written}. Row b runs while step < len = "
        "lengths[b] (int32 (batch,); the pointer 0 gives every row length steps) at t = len - "
        "1 - step when reverse is nonzero, else t = step; past its end its state stays (and "
        "y[step, b] = 0)", epilogue=epilogue)


def _lstm_step(quantize: bool) -> KernelSpec:
    dq = ("; then h (all rows * hidden of it) quantized as f32_dynamic_quantize_linear into "
          "uint8 q (rows, hidden) and the one f32 scale and one uint8 zero_point (the next "
          "step's integer product reads them)") if quantize else ""
    return KernelSpec(
        "f32_lstm_step" + ("_dynamic_quantize" if quantize else ""), "recurrent", "lstm_step",
        ("gates", "c", "h", "c_out", *(("q", "scale", "zero_point") if quantize else ()),
         "rows", "hidden"),
        "one LSTM step of an unrolled recurrence (the recurrent product already added into "
        "gates): for each row b, i, f, g, o = gates[b] (rows, 4 * hidden, torch's order); "
        "c_out = sigmoid(f) c + sigmoid(i) tanh(g), h = sigmoid(o) tanh(c_out), c and c_out "
        f"(rows, hidden) may be the same buffer{dq}",
        epilogue=("dynamic_quantize",) if quantize else (),
        dtypes=("float32", "uint8") if quantize else ("float32", "float32"))


LSTM_STEPS = (_lstm_step(False), _lstm_step(True))
"""The fused cell of a step of an unrolled LSTM (``DynamicQuantizeLSTM``), after its
product; the quantizing row also gives the next step's dynamic quantization of h."""
