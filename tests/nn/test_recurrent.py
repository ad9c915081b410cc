"""nn.LSTM, nn.GRU and nn.RNN against torch 2.13: constructor, state dict, outputs and final
states in every layout (batch_first, bidirectional, stacked, unbatched, given states)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from nn_parity import assert_close, copy_into, numpy_state, randomize, to_torch

import nn
from nn import functional as F

torch = pytest.importorskip("torch")

# (class, args, kwargs): the same call builds ours and torch's.
CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("LSTM", (5, 7), {}),
    ("LSTM", (5, 7), {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", (5, 6), {"bias": False, "num_layers": 3}),
    ("GRU", (5, 7), {}),
    ("GRU", (5, 7), {"num_layers": 2, "bidirectional": True}),
    ("GRU", (5, 6), {"bias": False, "batch_first": True}),
    ("RNN", (5, 7), {}),
    ("RNN", (5, 7), {"nonlinearity": "relu", "bidirectional": True, "num_layers": 2}),
    ("RNN", (5, 6), {"nonlinearity": "tanh", "bias": False, "batch_first": True}),
]
IDS = [f"{c}-{i}" for i, (c, _, _) in enumerate(CASES)]


def _pair(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    theirs = randomize(getattr(torch.nn, name)(*args, **kwargs).eval())
    ours = getattr(nn, name)(*args, **kwargs)
    return copy_into(ours, theirs), theirs


def _states(name: str, layers: int, batch: int | None, hidden: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    shape = (layers, hidden) if batch is None else (layers, batch, hidden)
    h = rng.standard_normal(shape).astype(np.float32)
    return (h, rng.standard_normal(shape).astype(np.float32)) if name == "LSTM" else h


def _torch_states(states: Any) -> Any:
    return tuple(to_torch(s) for s in states) if isinstance(states, tuple) else to_torch(states)


@pytest.mark.parametrize(("name", "args", "kwargs"), CASES, ids=IDS)
def test_state_dict_keys_and_shapes_match_torch(name: str, args: tuple, kwargs: dict) -> None:
    ours, theirs = _pair(name, args, kwargs)
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: v.shape for k, v in numpy_state(theirs).items()}
    assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize("given_state", [False, True])
@pytest.mark.parametrize(("name", "args", "kwargs"), CASES, ids=IDS)
def test_outputs_match_torch(name: str, args: tuple, kwargs: dict, given_state: bool) -> None:
    ours, theirs = _pair(name, args, kwargs)
    batch_first = kwargs.get("batch_first", False)
    x = np.random.default_rng(1).standard_normal((3, 6, args[0]) if batch_first
                                                 else (6, 3, args[0])).astype(np.float32)
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    hx = _states(name, layers, 3, args[1], 2) if given_state else None
    with torch.no_grad():
        expected = theirs(to_torch(x), None if hx is None else _torch_states(hx))
    assert_close(ours(x, hx), expected, atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_unbatched_input_matches_torch(name: str) -> None:
    ours, theirs = _pair(name, (4, 5), {"bidirectional": True})
    x = np.random.default_rng(3).standard_normal((7, 4)).astype(np.float32)
    hx = _states(name, 2, None, 5, 4)
    with torch.no_grad():
        expected = theirs(to_torch(x), _torch_states(hx))
    assert_close(ours(x, hx), expected, atol=2e-5, rtol=2e-5)


def test_repr_matches_torch() -> None:
    kwargs = {"num_layers": 2, "batch_first": True, "bidirectional": True}
    assert repr(nn.LSTM(3, 4, **kwargs)) == repr(torch.nn.LSTM(3, 4, **kwargs))
    assert repr(nn.GRU(3, 4)) == repr(torch.nn.GRU(3, 4))


def _reference_lengths(gates: np.ndarray, w_hh: np.ndarray, lengths: list[int],
                       reverse: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each sequence alone through torch's LSTM cell, cut at its length."""
    hidden = w_hh.shape[1]
    cell = torch.nn.LSTMCell(1, hidden, bias=False)
    with torch.no_grad():
        cell.weight_hh.copy_(torch.from_numpy(w_hh))
        cell.weight_ih.zero_()
    steps, batch = gates.shape[:2]
    y = np.zeros((steps, batch, hidden), np.float32)
    h_n, c_n = np.zeros((batch, hidden), np.float32), np.zeros((batch, hidden), np.float32)
    for b, length in enumerate(lengths):
        h = c = torch.zeros(1, hidden)
        order = range(length - 1, -1, -1) if reverse else range(length)
        for t in order:
            # NOTE: the precomputed gates enter through a bias-free cell: gates + h W_hh.T.
            with torch.no_grad():
                i, f, g, o = (torch.from_numpy(gates[t, b:b + 1]) + h @ cell.weight_hh.T
                              ).chunk(4, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
            y[t, b] = h.numpy()[0]
        h_n[b], c_n[b] = h.numpy()[0], c.numpy()[0]
    return y, h_n, c_n


@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_lengths_stop_each_sequence_at_its_end(reverse: bool) -> None:
    rng = np.random.default_rng(5)
    gates = rng.standard_normal((6, 3, 16)).astype(np.float32)
    w_hh = rng.standard_normal((16, 4)).astype(np.float32) * 0.5
    lengths = [6, 2, 4]
    ours = F.lstm(gates, w_hh, lengths=np.array(lengths, np.int32), reverse=reverse)
    for a, b in zip(ours, _reference_lengths(gates, w_hh, lengths, reverse)):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)


def test_bad_arguments_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match="proj_size=2 is not supported"):
        nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match=r"expected input \(T, B, 3\).*got shape \[5, 2, 4\]"):
        nn.GRU(3, 4)(np.zeros((5, 2, 4), np.float32))
    with pytest.raises(ValueError, match=r"lengths must be \(batch,\) = \(2,\) values in "
                                         r"\[0, 5\], got \[1, 7\]"):
        F.rnn(np.zeros((5, 2, 3), np.float32), np.zeros((3, 3), np.float32),
              lengths=np.array([1, 7]))
    with pytest.raises(ValueError, match="unknown nonlinearity 'elu'"):
        F.rnn(np.zeros((5, 2, 3), np.float32), np.zeros((3, 3), np.float32),
              nonlinearity="elu")


@pytest.mark.parametrize("batch,hidden", [(1, 5), (3, 8)])
def test_lstm_step_matches_torch_lstm_cell_and_ort_dynamic_quantization(batch: int,
                                                                        hidden: int) -> None:
    """One step of an unrolled LSTM against torch's LSTMCell fed the gates through an
    identity input weight and a zero recurrent weight, and its quantized h against
    onnxruntime's DynamicQuantizeLinear of that h."""
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    rng = np.random.default_rng(batch * hidden)
    gates = (rng.standard_normal((batch, 4 * hidden)) * 2).astype(np.float32)
    c = rng.standard_normal((batch, hidden)).astype(np.float32)
    h, new_c, q, scale, zero = F.lstm_step(gates, c, quantize=True)
    cell = torch.nn.LSTMCell(4 * hidden, hidden)
    with torch.no_grad():
        cell.weight_ih.copy_(torch.eye(4 * hidden))
        for tensor in (cell.weight_hh, cell.bias_ih, cell.bias_hh):
            tensor.zero_()
        want_h, want_c = cell(to_torch(gates), (torch.zeros(batch, hidden), to_torch(c)))
    np.testing.assert_allclose(h, want_h.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_c, want_c.numpy(), rtol=1e-5, atol=1e-6)
    helper = onnx.helper
    graph = helper.make_graph(
        [helper.make_node("DynamicQuantizeLinear", ["h"], ["q", "s", "z"])], "dq",
        [helper.make_tensor_value_info("h", onnx.TensorProto.FLOAT, list(h.shape))],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         (("q", onnx.TensorProto.UINT8), ("s", onnx.TensorProto.FLOAT),
          ("z", onnx.TensorProto.UINT8))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want_q, want_scale, want_zero = session.run(None, {"h": h})
    np.testing.assert_array_equal(q, want_q)
    assert scale == want_scale and zero == want_zero


def test_lstm_step_refuses_gates_not_four_times_the_state() -> None:
    with pytest.raises(ValueError, match=r"gates \(B, 4H\) and c \(B, H\), got \[2, 7\]"):
        F.lstm_step(np.zeros((2, 7), np.float32), np.zeros((2, 2), np.float32))
