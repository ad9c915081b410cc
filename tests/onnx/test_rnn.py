"""ONNX LSTM, GRU and RNN against onnxruntime: one-node models over directions, states,
sequence lengths, layouts and output subsets, in the interpreter and in wasm on every kernel
provider; models exported by torch.onnx from nn.LSTM / nn.GRU; symbolic length and batch;
the refusals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper

import modelc

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
PROVIDERS = ("relaxed", "simd128", "scalar", "host")


def recurrent_model(op: str, *, steps: int = 5, batch: int = 3, inputs: int = 4,
                    hidden: int = 6, direction: str = "forward", bias: bool = True,
                    states: bool = False, lengths: str | None = None, layout: int = 0,
                    outputs: tuple[str, ...] = ("Y", "Y_h", "Y_c"), symbolic: bool = False,
                    seed: int = 0, **attrs: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """A one-node recurrent model (weights as initializers) and its run-time inputs.
    ``lengths`` is None, ``"known"`` (an initializer) or ``"run"`` (an int32 input)."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    gates = GATES[op]

    def r(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.6).astype(np.float32)

    x_shape = (batch, steps, inputs) if layout else (steps, batch, inputs)
    state_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    feeds = {"X": r(*x_shape)}
    inits = {"W": r(dirs, gates * hidden, inputs), "R": r(dirs, gates * hidden, hidden)}
    if bias:
        inits["B"] = r(dirs, 2 * gates * hidden)
    lens = rng.integers(1, steps + 1, batch).astype(np.int32)
    lens[0] = steps
    if lengths == "known":
        inits["sequence_lens"] = lens
    elif lengths == "run":
        feeds["sequence_lens"] = lens
    if states:
        feeds["initial_h"] = r(*state_shape)
        if op == "LSTM":
            feeds["initial_c"] = r(*state_shape)
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c"][:7 if op == "LSTM"
                                                                            else 6]
    names = [n if n in feeds or n in inits else "" for n in order]
    while names and not names[-1]:
        names.pop()
    all_outputs = ["Y", "Y_h", "Y_c"][:3 if op == "LSTM" else 2]
    node = helper.make_node(op, names, [o if o in outputs else "" for o in all_outputs],
                            name=f"the_{op.lower()}", hidden_size=hidden, direction=direction,
                            **({"layout": layout} if layout else {}), **attrs)
    infos = []
    for name, array in feeds.items():
        shape: list[Any] = list(array.shape)
        if symbolic and name == "X":
            shape[:2] = ["batch", "seq"] if layout else ["seq", "batch"]
        infos.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(array.dtype), shape))
    graph = helper.make_graph(
        [node], "rnn", infos,
        [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None)
         for o in all_outputs if o in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    return model, feeds


CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "lstm_forward": ("LSTM", {}),
    "lstm_reverse_states": ("LSTM", {"direction": "reverse", "states": True}),
    "lstm_bidirectional_lengths": ("LSTM", {"direction": "bidirectional", "lengths": "known",
                                            "states": True}),
    "lstm_run_time_lengths_reverse": ("LSTM", {"direction": "reverse", "lengths": "run"}),
    "lstm_only_final_states": ("LSTM", {"outputs": ("Y_h", "Y_c"), "hidden": 9}),
    "lstm_only_y_c": ("LSTM", {"outputs": ("Y_c",), "direction": "bidirectional"}),
    "gru_forward_lbr": ("GRU", {"linear_before_reset": 1}),
    "gru_bidirectional_lbr_lengths": ("GRU", {"linear_before_reset": 1, "lengths": "known",
                                              "direction": "bidirectional", "states": True}),
    "rnn_tanh": ("RNN", {"states": True}),
    "rnn_relu_bidirectional": ("RNN", {"activations": ["Relu", "Relu"],
                                       "direction": "bidirectional", "lengths": "known"}),
    "rnn_reverse_only_y": ("RNN", {"direction": "reverse", "outputs": ("Y",)}),
    "gru_default_reset_before_product": ("GRU", {"direction": "bidirectional",
                                                 "states": True}),
    "gru_default_lengths_no_bias": ("GRU", {"lengths": "known", "direction": "reverse",
                                            "bias": False, "hidden": 9}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_imported_recurrence_matches_onnxruntime(case: str, check_against_ort: Any) -> None:
    op, kwargs = CASES[case]
    model, feeds = recurrent_model(op, **kwargs)
    check_against_ort(model, [feeds])


@pytest.mark.parametrize("case", sorted(CASES))
def test_recurrence_runs_in_wasm_as_onnxruntime(case: str, check_wasm_against_ort: Any
                                               ) -> None:
    op, kwargs = CASES[case]
    model, feeds = recurrent_model(op, **kwargs)
    check_wasm_against_ort(model, feeds)


LAYOUT1 = {
    "lstm_no_bias": ("LSTM", {"bias": False, "states": True, "direction": "bidirectional"}),
    "gru_lbr_lengths": ("GRU", {"linear_before_reset": 1, "hidden": 5, "lengths": "known",
                                "states": True}),
    "rnn_reverse": ("RNN", {"direction": "reverse", "states": True}),
}


@pytest.mark.parametrize("case", sorted(LAYOUT1))
def test_batch_major_layout_matches_the_time_major_model(case: str, compare_with_ort: Any
                                                         ) -> None:
    """onnxruntime refuses ``layout=1``, so the reference is its run of the same weights in
    layout 0 on transposed inputs, transposed back."""
    runtime = pytest.importorskip("runtime")
    op, kwargs = LAYOUT1[case]
    model, feeds = recurrent_model(op, layout=1, **kwargs)
    twin, _ = recurrent_model(op, layout=0, **kwargs)
    swapped = {k: v.transpose(1, 0, 2) if k != "sequence_lens" else v for k, v in feeds.items()}
    graph = modelc.from_onnx(model)
    wasm = modelc.export(graph)
    results = {"interpreter": modelc.interpret(modelc.optimize(graph), feeds)}
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            results[kernels] = session.run(feeds)
    for where, got in results.items():
        back = {k: v.transpose(1, 2, 0, 3) if k == "Y" else v.transpose(1, 0, 2)
                for k, v in got.items()}
        compare_with_ort(back, twin, swapped, f"layout 1 in the {where}")


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])  # GRU: ONNX's default reset
def test_symbolic_length_and_batch_set_the_trip_count(op: str, compare_with_ort: Any) -> None:
    runtime = pytest.importorskip("runtime")
    model, _ = recurrent_model(op, direction="bidirectional", symbolic=True, hidden=7)
    wasm = modelc.export(modelc.from_onnx(model))
    rng = np.random.default_rng(4)
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            for steps, batch in ((1, 1), (9, 2), (23, 5)):
                feeds = {"X": rng.standard_normal((steps, batch, 4)).astype(np.float32)}
                compare_with_ort(session.run(feeds), model, feeds,
                                 f"T={steps} B={batch} on {kernels}")


@pytest.mark.parametrize("given_states", [False, True])
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_torch_exported_layer_runs_in_wasm_as_onnxruntime(kind: str, given_states: bool,
                                                          torch_to_onnx: Any,
                                                          compare_with_ort: Any) -> None:
    """nn.LSTM / nn.GRU (2 layers, bidirectional, batch_first) through torch.onnx with a
    symbolic batch and length. Without states torch builds their zeros with ConstantOfShape
    over the batch, a run-time ``full``."""
    torch = pytest.importorskip("torch")
    runtime = pytest.importorskip("runtime")
    torch.manual_seed(0)
    layer = getattr(torch.nn, kind)(6, 10, num_layers=2, bidirectional=True, batch_first=True)
    names = ["y", "h_n", "c_n"] if kind == "LSTM" else ["y", "h_n"]
    rng = np.random.default_rng(5)
    state_names = (["h0", "c0"] if kind == "LSTM" else ["h0"]) if given_states else []
    axes = {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"},
            **{s: {1: "batch"} for s in [*state_names, *names[1:]]}}
    example = (torch.zeros(2, 5, 6),) + ((tuple(torch.zeros(4, 2, 10) for _ in state_names)
                                          if kind == "LSTM" else torch.zeros(4, 2, 10),)
                                         if given_states else ())
    data = torch_to_onnx(layer, example, ["x", *state_names], names, axes)
    wasm = modelc.export(modelc.from_onnx(data))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            for batch, steps in ((2, 5), (3, 17)):
                feeds = {"x": rng.standard_normal((batch, steps, 6)).astype(np.float32)}
                feeds |= {s: rng.standard_normal((4, batch, 10)).astype(np.float32)
                          for s in state_names}
                got = session.run(feeds)
                compare_with_ort(got, data, feeds, f"B={batch} T={steps} on {kernels}")
                states = [torch.from_numpy(feeds[s]) for s in state_names]
                with torch.no_grad():
                    ref = layer(torch.from_numpy(feeds["x"]), (tuple(states) if kind == "LSTM"
                                                               else states[0]) if states
                                else None)
                for name, expected in zip(names, [ref[0], *ref[1]] if kind == "LSTM"
                                          else list(ref)):
                    np.testing.assert_allclose(got[name], expected.numpy(), atol=1e-4,
                                               err_msg=f"{name} on {kernels} vs torch")


REFUSED = {
    "clip": ("LSTM", {"clip": 3.0}, "attribute 'clip' is not supported"),
    "input_forget": ("LSTM", {"input_forget": 1}, r"input_forget=1 .* is not supported"),
    "activations": ("LSTM", {"activations": ["Sigmoid", "Tanh", "Relu"]},
                    (r"activations \['Sigmoid', 'Tanh', 'Relu'\] are not supported; only the "
                     r"default \['sigmoid', 'tanh', 'tanh'\]")),
    "rnn_mixed": ("RNN", {"activations": ["Tanh", "Relu"], "direction": "bidirectional"},
                  r"activations \['tanh', 'relu'\] are not supported"),
    "alpha": ("RNN", {"activation_alpha": [0.5]}, "attribute 'activation_alpha'"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unsupported_variants_are_refused_naming_the_node(case: str) -> None:
    op, attrs, message = REFUSED[case]
    model, _ = recurrent_model(op, **attrs)
    with pytest.raises(modelc.CompileError, match=rf"ONNX node 'the_{op.lower()}' "
                                                   rf"\({op}\): {message}"):
        modelc.from_onnx(model)


def test_run_time_int64_lengths_are_refused_in_wasm() -> None:
    model, _ = recurrent_model("RNN", lengths="run")
    graph = modelc.from_onnx(model)
    graph.inputs["sequence_lens"].dtype = "int64"
    with pytest.raises(modelc.CompileError, match="run-time lengths must be int32, got int64"):
        modelc.export(graph)
