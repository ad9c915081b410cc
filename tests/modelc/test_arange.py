"""arange and tril over a symbolic dim in a traced forward: positions and a causal mask made
at run time, one module run at several lengths on every kernel provider against the same
forward run eagerly in numpy."""

from __future__ import annotations

import numpy as np
import pytest

import modelc
import nn
import runtime
from nn import functional as F

PROVIDERS = ("relaxed", "simd128", "scalar", "host")


class CausalPositions(nn.Module):
    """``x`` plus its positions, masked to the lower triangle of (seq, seq)."""

    def forward(self, x: object) -> object:
        seq = x.shape[1]  # type: ignore[attr-defined]
        positions = F.cast(F.arange(seq), np.float32)
        square = F.add(F.reshape(F.add(x, positions), (seq, 1)), F.full((1, seq), 0.0))
        return F.tril(square, -1)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_arange_and_tril_over_a_symbolic_dim_run_in_wasm(kernels: str) -> None:
    model = CausalPositions()
    wasm = modelc.export(model, (np.zeros((1, 4), np.float32),),
                         dynamic={"input0": {1: ("seq", 1, 12)}})
    rng = np.random.default_rng(0)
    with runtime.load(wasm, kernels=kernels) as session:
        for length in (1, 5, 12):
            x = rng.standard_normal((1, length)).astype(np.float32)
            np.testing.assert_array_equal(session.run(x)["output0"], model(x))


def test_arange_of_a_fixed_length_is_a_constant() -> None:
    graph = modelc.trace(CausalPositions(), (np.zeros((1, 4), np.float32),))
    assert "slice" not in graph.ops() and "le" not in graph.ops()
