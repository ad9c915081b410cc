"""nn.LSTM, nn.GRU and nn.RNN with torch's weights, compiled to wasm with a symbolic sequence
length and batch, on every kernel provider, against torch 2.13 within 1e-4."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import modelc
import nn
import runtime
from wasm_kernels import abi

torch = pytest.importorskip("torch")

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "lstm": ("LSTM", {}),
    "lstm_stacked_bidirectional_batch_first": ("LSTM", {"num_layers": 2, "bidirectional": True,
                                                        "batch_first": True}),
    "gru_bidirectional": ("GRU", {"bidirectional": True}),
    "gru_no_bias": ("GRU", {"bias": False, "num_layers": 2}),
    "rnn_relu": ("RNN", {"nonlinearity": "relu", "bidirectional": True}),
    "rnn_tanh_stacked": ("RNN", {"num_layers": 3}),
}
PROVIDERS = ("relaxed", "simd128", "scalar", "host")
INPUT, HIDDEN = 5, 9  # hidden not a multiple of 4: every SIMD kernel runs its scalar tail


class WithStates(nn.Module):
    """The layer called with initial states given as inputs."""

    def __init__(self, layer: Any) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: Any, *states: Any) -> Any:
        return self.layer(x, tuple(states) if len(states) == 2 else states[0])


def _flat(result: Any) -> list[Any]:
    out, final = result
    return [out, *final] if isinstance(final, tuple) else [out, final]


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request: pytest.FixtureRequest) -> tuple[Any, Any, bytes, dict[str, Any]]:
    kind, kwargs = CASES[request.param]
    torch.manual_seed(1)
    theirs = getattr(torch.nn, kind)(INPUT, HIDDEN, **kwargs).eval()
    ours = getattr(nn, kind)(INPUT, HIDDEN, **kwargs)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    seq, batch = (1, 0) if kwargs.get("batch_first") else (0, 1)
    x = np.zeros((2, 3, INPUT) if kwargs.get("batch_first") else (3, 2, INPUT), np.float32)
    states = {f"s{i}": np.zeros((layers, 2, HIDDEN), np.float32)
              for i in range(2 if kind == "LSTM" else 1)}
    dynamic = {"x": {seq: ("seq", 1, 64), batch: ("batch", 1, 8)},
               **{name: {1: ("batch", 1, 8)} for name in states}}
    wasm = modelc.export(WithStates(ours).eval(), {"x": x, **states}, dynamic=dynamic)
    return theirs, ours, wasm, {"layers": layers, "states": sorted(states),
                                "batch_first": kwargs.get("batch_first", False)}


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_layer_in_wasm_matches_torch(compiled: Any, kernels: str) -> None:
    theirs, _, wasm, info = compiled
    rng = np.random.default_rng(2)
    with runtime.load(wasm, kernels=kernels) as session:
        for steps, batch in ((1, 1), (7, 3), (40, 8)):
            shape = (batch, steps, INPUT) if info["batch_first"] else (steps, batch, INPUT)
            feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
            feeds |= {name: rng.standard_normal((info["layers"], batch, HIDDEN)
                                                ).astype(np.float32)
                      for name in info["states"]}
            states = [torch.from_numpy(feeds[n]) for n in info["states"]]
            with torch.no_grad():
                want = _flat(theirs(torch.from_numpy(feeds["x"]),
                                    tuple(states) if len(states) == 2 else states[0]))
            got = session.run(feeds)
            for i, expected in enumerate(want):
                e = expected.numpy()
                err = float(np.abs(got[f"output{i}"] - e).max())
                assert err <= 1e-4 * max(1.0, float(np.abs(e).max())), \
                    f"output{i} T={steps} B={batch} on {kernels}: max error {err:.3g}"


def test_one_loop_per_direction_in_the_compiled_graph(compiled: Any) -> None:
    """The compiled graph holds one recurrence node per layer and direction, each after one
    linear projecting every step (the loop over time is inside the node's lowering)."""
    _, ours, _, info = compiled
    x = np.zeros((4, 2, INPUT), np.float32)
    graph = modelc.optimize(modelc.trace(ours.eval(), (x,)))
    recurrences = [n for n in graph.nodes if n.op in ("lstm", "gru", "rnn")]
    assert len(recurrences) == info["layers"]
    for node in recurrences:
        assert node.inputs[0].producer is not None
        assert node.inputs[0].producer.op == "linear"


def test_onnx_style_gru_with_a_run_time_recurrent_bias_is_refused() -> None:
    """ONNX's default GRU splits bias_hh between its two products at compile time."""
    from nn import functional as F

    class Gru(nn.Module):
        def forward(self, gates: Any, bias: Any) -> Any:
            return F.gru(gates, np.ones((6, 2), np.float32), bias,
                         linear_before_reset=False)[0]

    example = (np.zeros((3, 1, 6), np.float32), np.zeros(6, np.float32))
    with pytest.raises(modelc.CompileError, match="linear_before_reset=False needs bias_hh "
                                                  "known at compile time"):
        modelc.export(Gru(), example)


def test_the_loop_over_time_is_inside_the_module() -> None:
    """One wasm loop and one cell call site per layer and direction, whatever the length:
    the steps never cross back into Python."""
    import re
    import shutil
    import subprocess
    import tempfile

    if shutil.which("wasm2wat") is None:
        pytest.skip("wabt's wasm2wat is not installed")
    layer = nn.LSTM(3, 4, num_layers=2, bidirectional=True).eval()
    wasm = modelc.export(layer, (np.zeros((5, 2, 3), np.float32),),
                         dynamic={"input0": {0: ("seq", 1, 1000)}})
    with tempfile.NamedTemporaryFile(suffix=".wasm") as file:
        file.write(wasm)
        file.flush()
        text = subprocess.run(["wasm2wat", "--enable-all", file.name], capture_output=True,
                              text=True, check=True).stdout
    # NOTE: the name section makes wasm2wat name the import ($...) instead of numbering it.
    (cell,) = re.findall(rf'import "{abi.MODULE}" "f32_lstm_cell" \(func (\$[\w.]+|\(;\d+;\))',
                         text)
    ref = re.escape(cell if cell.startswith("$") else cell[2:-2])
    assert len(re.findall(rf"\bcall {ref}(?![\w.])", text)) == 4
    assert len(re.findall(r"^\s*loop\b", text, re.MULTILINE)) == 4
