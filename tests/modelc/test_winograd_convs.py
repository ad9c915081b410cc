"""winograd_convs: a dense 3x3 stride-1 conv rewritten as Winograd F(2x2, 3x3) (pad,
winograd_input, a 16-group 1x1 conv, winograd_output) equals torch's conv2d on every kernel
provider: even and odd outputs, padding 0 and 1, batch over 1, bias or none, fused
activations and a residual; convs it does not cover stay convs."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import runtime
from nn import functional as F

PASS = importlib.import_module("modelc.passes.winograd_convs")
RNG = np.random.default_rng(7)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


W = _x(24, 16, 3, 3)
B = _x(24)

# name: (conv kwargs, input shape, bias, activation, residual)
CASES = {
    "even_pad1": ({"padding": 1}, (1, 16, 8, 10), True, None, False),
    "odd_pad1_batch_relu": ({"padding": 1}, (2, 16, 7, 9), True, "relu", False),
    "odd_pad0_silu": ({"padding": 0}, (1, 16, 9, 6), True, "silu", False),
    "even_pad0_batch_nobias": ({"padding": 0}, (3, 16, 6, 8), False, None, False),
    "same_residual_relu": ({"padding": "same"}, (1, 16, 5, 7), True, "relu", True),
    "asymmetric_pad": ({"padding": (0, 1)}, (2, 16, 6, 5), False, None, False),
    # rows of tiles wider than a register of tiles: interior groups and a partial last one
    "wide_pad1": ({"padding": 1}, (1, 16, 14, 30), True, None, False),
    "wide_odd_batch_residual_gelu": ({"padding": 1}, (2, 16, 11, 21), True, "gelu", True),
    "wide_pad0_relu6": ({"padding": 0}, (1, 16, 12, 19), False, "relu6", False),
}


def _model(kwargs: dict, bias: bool, activation: str | None, residual: bool) -> Lambda:
    weight = W[:16] if residual else W  # a residual of the input's own shape

    def forward(x: np.ndarray) -> np.ndarray:
        y = F.conv2d(x, weight, B[:len(weight)] if bias else None, **kwargs)
        if residual:
            y = y + x
        return getattr(F, activation)(y) if activation else y
    return Lambda(forward)


def _torch(torch, x, kwargs: dict, bias: bool, activation: str | None, residual: bool):  # type: ignore[no-untyped-def]
    t, weight = torch.from_numpy(x), torch.from_numpy(W[:16] if residual else W)
    y = torch.nn.functional.conv2d(t, weight, torch.from_numpy(B[:len(weight)]) if bias else None,
                                   **kwargs)
    if residual:
        y = y + t
    return getattr(torch.nn.functional, activation)(y) if activation else y


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    kwargs, shape, bias, activation, residual = CASES[request.param]
    x = _x(*shape)
    patch = pytest.MonkeyPatch()
    patch.setattr(PASS, "ENABLED", True)
    patch.setattr(PASS, "MIN_CHANNELS", 16)
    try:
        graph = modelc.optimize(modelc.trace(_model(kwargs, bias, activation, residual), (x,)))
        wasm = modelc.export(_model(kwargs, bias, activation, residual), (x,))
    finally:
        patch.undo()
    return graph, wasm, x, CASES[request.param]


def test_the_conv_is_rewritten(compiled) -> None:  # type: ignore[no-untyped-def]
    graph = compiled[0]
    assert {"winograd_input", "winograd_output"} <= set(graph.ops())
    assert all(n.attrs.get("groups") == 16 for n in graph.nodes if n.op == "conv2d")


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_winograd_matches_torch(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    _, wasm, x, (kwargs, _, bias, activation, residual) = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({"input0": x})["output0"]
    with torch.no_grad():
        expected = _torch(torch, x, kwargs, bias, activation, residual).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kwargs,shape,weight", [
    ({"padding": 1, "stride": 2}, (1, 16, 8, 8), W),
    ({"padding": 2, "dilation": 2}, (1, 16, 8, 8), W),
    ({"padding": 1}, (1, 8, 8, 8), W[:, :8]),  # too few input channels
    ({"padding": 1, "groups": 2}, (1, 32, 8, 8), W),
    ({"padding": 2}, (1, 16, 8, 8), _x(24, 16, 5, 5)),
])
def test_convs_it_does_not_cover_stay(kwargs: dict, shape: tuple, weight: np.ndarray,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PASS, "ENABLED", True)
    monkeypatch.setattr(PASS, "MIN_CHANNELS", 16)
    model = Lambda(lambda x: F.conv2d(x, weight, None, **kwargs))
    graph = modelc.optimize(modelc.trace(model, (_x(*shape),)))
    assert "winograd_input" not in graph.ops()


@pytest.mark.parametrize("threads", [2, 3])
def test_winograd_on_threads_matches_torch_and_one_thread(compiled, threads: int) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    _, wasm, x, (kwargs, _, bias, activation, residual) = compiled
    with runtime.load(wasm, threads=threads) as session:
        got = session.run({"input0": x})["output0"]
    with runtime.load(wasm, threads=1) as session:
        one_thread = session.run({"input0": x})["output0"]
    with torch.no_grad():
        expected = _torch(torch, x, kwargs, bias, activation, residual).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    # the grouped product splits by pixels across threads: every element as on one thread
    np.testing.assert_array_equal(got, one_thread)
