"""com.microsoft DynamicQuantizeLSTM (onnxruntime's ``quantize_dynamic`` LSTM) against
onnxruntime on one thread, on the interpreter and on every kernel provider: each direction,
initial states or none, a scale per direction or per gate column, batches of one and more;
and its refusals.

onnxruntime quantizes the hidden state of a whole batch at once on one thread but splits
the batch between its threads (each part with its own scale), so only its one-thread run
is a fixed reference for batches of more than one; wasmnn quantizes the whole batch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
runtime = pytest.importorskip("runtime")
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
OUTPUTS = ("y", "y_h", "y_c")


def quantized_lstm(steps: int | str, batch: int, size: int, hidden: int, direction: str,
                   states: bool = False, per_column: bool = False, bias: bool = True,
                   lengths: np.ndarray | None = None) -> tuple[Any, dict[str, np.ndarray]]:
    """A one-node DynamicQuantizeLSTM model (int8 W and R, zero points 0 as
    ``quantize_dynamic`` makes them) and inputs for it."""
    rng = np.random.default_rng(steps if isinstance(steps, int) else 0)
    d = 2 if direction == "bidirectional" else 1
    scales = (d, 4 * hidden) if per_column else (d,)
    inits = {"W": rng.integers(-127, 128, (d, size, 4 * hidden)).astype(np.int8),
             "R": rng.integers(-127, 128, (d, hidden, 4 * hidden)).astype(np.int8),
             "B": rng.uniform(-0.5, 0.5, (d, 8 * hidden)).astype(np.float32),
             "w_scale": rng.uniform(0.002, 0.01, scales).astype(np.float32),
             "r_scale": rng.uniform(0.002, 0.01, scales).astype(np.float32),
             "w_zero": np.zeros(scales, np.int8), "r_zero": np.zeros(scales, np.int8)}
    if lengths is not None:
        inits["lengths"] = lengths
    names = ["x", "W", "R", "B" if bias else "", "lengths" if lengths is not None else "",
             "h0" if states else "", "c0" if states else "", "", "w_scale", "w_zero",
             "r_scale", "r_zero"]
    node = helper.make_node("DynamicQuantizeLSTM", names, list(OUTPUTS), domain="com.microsoft",
                            hidden_size=hidden, direction=direction)
    inputs = [helper.make_tensor_value_info("x", F, [steps, batch, size])]
    feeds = {"x": rng.standard_normal((steps if isinstance(steps, int) else 3, batch, size))
             .astype(np.float32)}
    if states:
        inputs += [helper.make_tensor_value_info(k, F, [d, batch, hidden]) for k in ("h0", "c0")]
        feeds.update({k: (0.3 * rng.standard_normal((d, batch, hidden))).astype(np.float32)
                      for k in ("h0", "c0")})
    graph = helper.make_graph([node], "quantized_lstm", inputs,
                              [helper.make_tensor_value_info(k, F, None) for k in OUTPUTS],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)]), feeds


def ort_one_thread(model: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return dict(zip(OUTPUTS, session.run(None, feeds)))


CASES = [(5, 1, 8, 4, "forward", False, False, True),
         (5, 1, 8, 4, "reverse", True, False, True),
         (4, 1, 6, 8, "bidirectional", True, True, True),
         (6, 3, 16, 8, "bidirectional", False, False, False),
         (3, 2, 8, 4, "forward", True, True, True)]


@pytest.mark.parametrize("steps,batch,size,hidden,direction,states,per_column,bias", CASES)
def test_dynamic_quantize_lstm_matches_onnxruntime(steps: int, batch: int, size: int,
                                                   hidden: int, direction: str, states: bool,
                                                   per_column: bool, bias: bool,
                                                   close) -> None:
    model, feeds = quantized_lstm(steps, batch, size, hidden, direction, states, per_column,
                                  bias)
    want = ort_one_thread(model, feeds)
    graph = modelc.from_onnx(model)
    got = modelc.interpret(modelc.optimize(graph), feeds)
    for name in OUTPUTS:
        close(got[name], want[name], f"{name} in the interpreter")
    wasm = modelc.export(graph)
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            ran = session.run(feeds)
        for name in OUTPUTS:
            close(ran[name], want[name], f"{name} on {kernels}")


def test_sequence_lengths_shorter_than_the_sequence_are_refused() -> None:
    model, _ = quantized_lstm(4, 2, 8, 4, "forward", lengths=np.array([4, 2], np.int32))
    with pytest.raises(modelc.CompileError, match="DynamicQuantizeLSTM.*sequence_lens"):
        modelc.from_onnx(model)


def test_a_symbolic_sequence_length_is_refused_naming_input_shapes() -> None:
    model, _ = quantized_lstm("T", 1, 8, 4, "forward")
    with pytest.raises(modelc.CompileError, match="fixed sequence length.*input_shapes"):
        modelc.from_onnx(model)
