"""full: a run-time tensor over a symbolic shape, on every kernel provider; folded when the
shape is known (ONNX ConstantOfShape: tests/onnx/test_constant_of_shape.py)."""

from __future__ import annotations

import numpy as np
import pytest

import modelc
import nn
import runtime
from nn import functional as F

PROVIDERS = ("relaxed", "simd128", "scalar", "host")


class ShiftBy(nn.Module):
    def forward(self, x: object) -> object:
        return F.add(x, F.full((x.shape[0], 1, x.shape[2]), -1.5))  # type: ignore[attr-defined]


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_full_over_symbolic_dims_runs_in_wasm(kernels: str) -> None:
    x = np.zeros((2, 3, 5), np.float32)
    wasm = modelc.export(ShiftBy(), (x,), dynamic={"input0": {0: ("b", 1, 8), 2: ("n", 1, 9)}})
    rng = np.random.default_rng(0)
    with runtime.load(wasm, kernels=kernels) as session:
        for shape in ((1, 3, 1), (4, 3, 9)):
            data = rng.standard_normal(shape).astype(np.float32)
            np.testing.assert_array_equal(session.run(data)["output0"], data - 1.5)


def test_full_of_known_shape_folds() -> None:
    graph = modelc.trace(ShiftBy(), (np.zeros((2, 3, 5), np.float32),))
    assert "full" not in graph.ops()


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("dtype, value", [(np.int64, 7), (np.int16, -300), (np.uint8, 200),
                                          (np.bool_, True)])
def test_integer_full_over_a_symbolic_dim_runs_in_wasm(kernels: str, dtype: type,
                                                       value: object) -> None:
    class Ints(nn.Module):
        def forward(self, x: object) -> object:
            return F.full((x.shape[0], 3), value, dtype)  # type: ignore[attr-defined]

    wasm = modelc.export(Ints(), (np.zeros(3, np.float32),), dynamic={"input0": {0: ("b", 1, 4)}})
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run(np.zeros(2, np.float32))["output0"]
    np.testing.assert_array_equal(got, np.full((2, 3), value, dtype))
    assert got.dtype == np.dtype(dtype)
