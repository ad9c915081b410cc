"""The recurrent cell kernels (one time step of LSTM, GRU, RNN gate math) against a float64
numpy reference, at register edges of the hidden size, with and without lengths, forward
and reverse, on every provider; the unrolled LSTM step (and its dynamic quantization of h,
against ``nn.functional.dynamic_quantize_linear`` of the kernel's own h)."""

from __future__ import annotations

import numpy as np
import pytest

from nn import functional as F
from wasm_kernels import abi

HIDDEN = [3, 4, 13]
STEPS, BATCH, STEP = 5, 4, 1
LENGTHS = np.array([5, 2, 1, 4], np.int32)  # rows 1 (at step 1 in reverse: t 0) and 2 end


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _reference(spec: abi.KernelSpec, x: np.ndarray, hw: np.ndarray,
               row: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One row's new states in float64."""
    hidden = row["h"].size
    g, r = x.reshape(-1, hidden), hw.reshape(-1, hidden)
    if spec.op == "lstm_cell":
        c = _sigmoid(g[1] + r[1]) * row["c"] + _sigmoid(g[0] + r[0]) * np.tanh(g[2] + r[2])
        return {"c": c, "h": _sigmoid(g[3] + r[3]) * np.tanh(c)}
    if spec.op == "gru_reset":
        return {"rh": _sigmoid(g[0] + r[0]) * row["h"]}
    if spec.op in ("gru_cell", "gru_update"):
        z = _sigmoid(g[1] + r[1])
        n = np.tanh(g[2] + (_sigmoid(g[0] + r[0]) * r[2] if spec.op == "gru_cell"
                            else row["hn"]))
        return {"h": (1 - z) * n + z * row["h"]}
    act = np.tanh if spec.epilogue == ("tanh",) else (lambda v: np.maximum(v, 0))
    return {"h": act(g[0] + r[0])}


@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("name", [k.name for k in abi.KERNELS if k.op in abi.RECURRENT_CELLS])
def test_cell_step_matches_numpy(kernels, name: str, hidden: int, with_lengths: bool,  # type: ignore[no-untyped-def]
                                 reverse: int) -> None:
    spec = abi.BY_NAME[name]
    operands, x_gates, hw_gates, _ = abi.RECURRENT_CELLS[spec.op]
    rng = np.random.default_rng(hidden)
    x = (rng.standard_normal((STEPS, BATCH, x_gates * hidden)) * 2).astype(np.float32)
    hw = (rng.standard_normal((BATCH, hw_gates * hidden)) * 2).astype(np.float32)
    given = {n: rng.standard_normal((STEPS, BATCH, hidden) if n == "y" else (BATCH, hidden)
                                    ).astype(np.float32) for n in operands}
    lengths = LENGTHS if with_lengths else np.full(BATCH, STEPS, np.int32)
    got = kernels.call(name, offset=4, x=x, hw=hw,
                       **{n: kernels.inout(v) for n, v in given.items()},
                       lengths=LENGTHS if with_lengths else 0, batch=BATCH, hidden=hidden,
                       step=STEP, steps=STEPS, reverse=reverse)
    want = {n: v.astype(np.float64) for n, v in given.items()}
    for b, length in enumerate(lengths):
        if STEP >= length:
            if "y" in want:
                want["y"][STEP, b] = 0
            continue
        t = length - 1 - STEP if reverse else STEP
        new = _reference(spec, x[t, b].astype(np.float64), hw[b],
                         {n: v[b] for n, v in given.items() if n != "y"})
        for n, v in new.items():
            want[n][b] = v
        if "y" in want:
            want["y"][t, b] = new["h"]
    for n in operands:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-5, atol=1e-6, err_msg=n)


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("hidden", HIDDEN + [37])
@pytest.mark.parametrize("name", [k.name for k in abi.KERNELS if k.op == "lstm_step"])
def test_lstm_step_matches_numpy(kernels, name: str, hidden: int, rows: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(hidden + rows)
    gates = (rng.standard_normal((rows, 4 * hidden)) * 2).astype(np.float32)
    c = rng.standard_normal((rows, hidden)).astype(np.float32)
    quantize = "q" in abi.BY_NAME[name].params
    outputs = {"h": kernels.output((rows, hidden), np.float32),
               "c_out": kernels.output((rows, hidden), np.float32)}
    if quantize:
        outputs.update(q=kernels.output((rows, hidden), np.uint8),
                       scale=kernels.output((1,), np.float32),
                       zero_point=kernels.output((1,), np.uint8))
    got = kernels.call(name, offset=4, gates=gates, c=c, **outputs, rows=rows, hidden=hidden)
    want = {n: np.zeros((rows, hidden)) for n in ("c", "h")}
    for b in range(rows):
        new = _reference(abi.BY_NAME["f32_lstm_cell"], gates[b].astype(np.float64),
                         np.zeros(4 * hidden), {"c": c[b].astype(np.float64),
                                                "h": np.zeros(hidden)})
        for n, v in new.items():
            want[n][b] = v
    np.testing.assert_allclose(got["c_out"], want["c"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["h"], want["h"], rtol=1e-5, atol=1e-6)
    if quantize:
        q, scale, zero_point = F.dynamic_quantize_linear(got["h"])
        np.testing.assert_array_equal(got["q"], q)
        np.testing.assert_array_equal(got["scale"][0], scale)
        np.testing.assert_array_equal(got["zero_point"][0], zero_point)
