"""phase_dilated_convs (called by winograd_convs): a dilated 3x3 conv run as one F(4x4, 3x3)
conv over its phase planes equals torch's dilated conv2d and the eager model on every kernel
provider: odd planes, a dilation that does not divide them, unequal dilations, batch 2, bias
or none, fused activations; convs whose phases the tiles cover badly stay dilated convs."""

from __future__ import annotations

import dilated_cases
import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import runtime
from nn import functional as F

# name: (dilation, input shape, bias, activation)
CASES = {
    "d2_odd_batch_relu": (2, (2, 16, 15, 15), True, "relu"),
    "d3_not_dividing_silu": (3, (1, 16, 23, 22), True, "silu"),
    "d5_batch_nobias": (5, (2, 16, 39, 40), False, None),
    "d6_relu6": (6, (1, 16, 46, 46), True, "relu6"),
    "d2x3_relu": ((2, 3), (1, 16, 16, 24), True, "relu"),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    """(graph, wasm, input, case) of a case."""
    return dilated_cases.compiled(CASES[request.param], dilated=False)


def test_the_conv_runs_over_phases_as_f4(compiled) -> None:  # type: ignore[no-untyped-def]
    graph = compiled[0]
    assert [n.attrs["tile"] for n in graph.nodes if n.op == "winograd_input"] == [4]
    assert all(n.attrs.get("dilation", 1) in (1, (1, 1)) for n in graph.nodes
               if n.op == "conv2d")


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_phases_match_torch_and_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    _, wasm, x, case = compiled
    dilated_cases.assert_matches_torch_and_eager(wasm, x, case, kernels)


@pytest.mark.parametrize("kwargs,shape,residual", [
    ({"padding": 2, "dilation": 2}, (1, 16, 17, 17), False),  # 9x9 phases: cover 1.99
    ({"padding": 1, "dilation": 2}, (1, 16, 16, 16), False),  # padding not the dilation
    ({"padding": 2, "dilation": 2}, (1, 16, 16, 16), True),   # a residual
])
def test_convs_it_does_not_cover_stay_dilated(kwargs: dict, shape: tuple,
                                              residual: bool) -> None:
    weight = dilated_cases.W[:16]

    def forward(x: np.ndarray) -> np.ndarray:
        y = F.conv2d(x, weight, None, **kwargs)
        return F.relu(y + x) if residual else y
    with dilated_cases.dilated_winograd(False):
        graph = modelc.optimize(modelc.trace(Lambda(forward),
                                             (dilated_cases.random(*shape),)))
    assert "winograd_input" not in graph.ops()
    assert [n.attrs["dilation"] for n in graph.nodes if n.op == "conv2d"] == [
        kwargs["dilation"]]


def test_winograd_off_keeps_the_dilated_conv() -> None:
    x = dilated_cases.random(1, 16, 16, 16)
    model = dilated_cases.model(2, True, "relu")
    wasm = modelc.export(model, (x,), winograd=False)
    assert b"f32_winograd" not in wasm
    with runtime.load(wasm) as session:
        np.testing.assert_allclose(session.run({"input0": x})["output0"], model(x),
                                   rtol=1e-4, atol=1e-4)


def test_phases_on_two_threads_match_one_thread(compiled) -> None:  # type: ignore[no-untyped-def]
    _, wasm, x, _ = compiled
    dilated_cases.assert_two_threads_match_one(wasm, x)
