"""trim_dilated_convs (called by winograd_convs): a dilated 3x3 conv run as convs over the
regions of its output whose taps fall inside the input, joined, equals torch's dilated
conv2d and the eager model on every kernel provider: CRAFT's dilations, planes under twice
the dilation and under the dilation, unequal dilations, batch 2, bias or none, fused
activations; the regions' convs read no padding."""

from __future__ import annotations

import dilated_cases
import numpy as np
import pytest
from executors import PROVIDERS

# name: (dilation, input shape, bias, activation)
CASES = {
    "d12_craft_relu": (12, (1, 16, 64, 64), True, "relu"),
    "d24_craft_batch_relu": (24, (2, 16, 64, 64), True, "relu"),
    "d5_under_twice_silu": (5, (1, 16, 9, 13), True, "silu"),
    "d3x6_nobias": ((3, 6), (1, 16, 14, 30), False, None),
    "d24_plane_under_dilation_relu": (24, (1, 16, 20, 20), True, "relu"),  # centre tap only
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    """(graph, wasm, input, case) of a case."""
    return dilated_cases.compiled(CASES[request.param], dilated=False)


def test_the_regions_read_no_padding(compiled) -> None:  # type: ignore[no-untyped-def]
    graph, _, x, (dilation, *_) = compiled
    convs = [n for n in graph.nodes if n.op == "conv2d"]
    outputs = sum(int(np.prod(n.output.shape[2:])) for n in convs)
    assert outputs == x.shape[2] * x.shape[3]
    for conv in convs:
        assert conv.attrs["padding"] == 0
        assert conv.attrs["dilation"] == dilation


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_regions_match_torch_and_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    _, wasm, x, case = compiled
    dilated_cases.assert_matches_torch_and_eager(wasm, x, case, kernels, winograd=False)


def test_regions_on_two_threads_match_one_thread(compiled) -> None:  # type: ignore[no-untyped-def]
    _, wasm, x, _ = compiled
    dilated_cases.assert_two_threads_match_one(wasm, x)
