"""An MLP compiled to wasm equals numpy written here, on every kernel provider."""

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
import nn
import runtime


def _reference(params: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    # Written out independently of nn: alternate Linear and ReLU.
    pairs = list(zip(params[::2], params[1::2]))
    for i, (weight, bias) in enumerate(pairs):
        x = x.astype(np.float64) @ weight.T.astype(np.float64) + bias
        if i < len(pairs) - 1:
            x = np.maximum(x, 0)
    return x


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.mark.parametrize("sizes", [(1, 1), (3, 5, 2), (64, 128, 64, 10), (33, 17, 9, 4)])
@pytest.mark.parametrize("kernels", PROVIDERS)
def test_mlp_matches_numpy(sizes, kernels):
    rng = np.random.default_rng(len(sizes))
    layers = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1]).eval()
    wasm = modelc.export(model, (np.zeros((2, sizes[0]), np.float32),),
                         dynamic={"input0": {0: ("batch", 1, 40)}})
    params = [np.asarray(p) for p in model.parameters()]
    with runtime.load(wasm, kernels=kernels) as session:
        for batch in (1, 2, 7, 40):
            x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
            got = session.run(x)["output0"]
            assert got.shape == (batch, sizes[-1]) and got.dtype == np.float32
            assert _relative_error(got, _reference(params, x)) < 1e-5
            assert _relative_error(got, model(x)) < 1e-5


def test_fixed_shape_model_needs_no_wasi():
    model = nn.Sequential(nn.Linear(4, 3)).eval()
    wasm = modelc.export(model, (np.zeros((2, 4), np.float32),))
    from wasm_kernels.wasm import read_module
    assert all(i.module != "wasi_snapshot_preview1" for i in read_module(wasm).imports)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    got = runtime.load(wasm).run(x)["output0"]
    np.testing.assert_allclose(got, _reference([np.asarray(p) for p in model.parameters()], x),
                               rtol=1e-6, atol=1e-6)


def test_graph_interpreter_agrees_with_wasm():
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    example = (np.zeros((5, 6), np.float32),)
    graph = modelc.optimize(modelc.trace(model, example))
    x = np.random.default_rng(3).standard_normal((5, 6)).astype(np.float32)
    wasm_out = runtime.load(modelc.export(model, example)).run(x)["output0"]
    np.testing.assert_allclose(modelc.interpret(graph, {"input0": x})["output0"], wasm_out,
                               rtol=1e-5, atol=1e-6)
