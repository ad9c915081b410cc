"""The recurrent cell kernels (one time step of LSTM, GRU, RNN gate math) against a float64
numpy reference, at register edges of the hidden size, with and without lengths, forward
and reverse, on every provider."""

from __future__ import annotations

import numpy as np
import pytest

from wasm_kernels import abi

HIDDEN = [3, 4, 13]
STEPS, BATCH, STEP = 5, 4, 1
LENGTHS = np.array([5, 2, 1, 4], np.int32)  # rows 1 (at step 1 in reverse: t 0) and 2 end


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _reference(spec: abi.KernelSpec, x: np.ndarray, hw: np.ndarray, h: np.ndarray,
               c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row's new (h, c) in float64."""
    if spec.op == "lstm_cell":
        i, f, g, o = np.split(x + hw, 4)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    if spec.op == "gru_cell":
        (xr, xz, xn), (hr, hz, hn) = np.split(x, 3), np.split(hw, 3)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        return (1 - z) * n + z * h, c
    return (np.tanh(x + hw) if spec.epilogue == ("tanh",) else np.maximum(x + hw, 0)), c


@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("name", [k.name for k in abi.KERNELS if k.family == "recurrent"])
def test_cell_step_matches_numpy(kernels, name: str, hidden: int, with_lengths: bool,  # type: ignore[no-untyped-def]
                                 reverse: int) -> None:
    spec = abi.BY_NAME[name]
    gates = abi.RECURRENT_CELLS[spec.op][0]
    rng = np.random.default_rng(hidden)
    x = (rng.standard_normal((STEPS, BATCH, gates * hidden)) * 2).astype(np.float32)
    hw = (rng.standard_normal((BATCH, gates * hidden)) * 2).astype(np.float32)
    h = rng.standard_normal((BATCH, hidden)).astype(np.float32)
    c = rng.standard_normal((BATCH, hidden)).astype(np.float32)
    y = rng.standard_normal((STEPS, BATCH, hidden)).astype(np.float32)
    lengths = LENGTHS if with_lengths else np.full(BATCH, STEPS, np.int32)
    states = {"c": kernels.inout(c), "h": kernels.inout(h)} if spec.op == "lstm_cell" else {
        "h": kernels.inout(h)}
    got = kernels.call(name, offset=4, x=x, hw=hw, **states, y=kernels.inout(y),
                       lengths=LENGTHS if with_lengths else 0, batch=BATCH, hidden=hidden,
                       step=STEP, steps=STEPS, reverse=reverse)
    want_h, want_c, want_y = h.astype(np.float64), c.astype(np.float64), y.astype(np.float64)
    for b, length in enumerate(lengths):
        if STEP >= length:
            want_y[STEP, b] = 0
            continue
        t = length - 1 - STEP if reverse else STEP
        want_h[b], want_c[b] = _reference(spec, x[t, b].astype(np.float64), hw[b], h[b], c[b])
        want_y[t, b] = want_h[b]
    np.testing.assert_allclose(got["h"], want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["y"], want_y, rtol=1e-5, atol=1e-6)
    if spec.op == "lstm_cell":
        np.testing.assert_allclose(got["c"], want_c, rtol=1e-5, atol=1e-6)
