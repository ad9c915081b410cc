"""winograd_convs over a dilated conv's own plane (the transforms' dilated kernels, tiles of
outputs ``dilation`` apart): F(2x2, 3x3) and F(4x4, 3x3) equal torch's dilated conv2d and the
eager model on every kernel provider, for dilations under, at and over the 4 tiles a
register holds (groups of tiles crossing blocks), planes the blocks do not divide, batch 2,
bias or none, fused activations; two threads match one; CRAFT's refiner's dilations take the
transforms where they are expected to beat the regions, and the regions' centre (padding 0)
takes them at dilation 12."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator

import dilated_cases
import numpy as np
import pytest
from executors import PROVIDERS

import modelc

winograd_convs = importlib.import_module("modelc.passes.winograd_convs")

# name: (dilation, input shape, bias, activation)
CASES = {
    "d2_odd_batch_relu": (2, (2, 16, 15, 15), True, "relu"),
    "d3_not_dividing_silu": (3, (1, 16, 23, 22), True, "silu"),
    "d4_nobias": (4, (1, 16, 20, 21), False, None),
    "d6_relu6": (6, (1, 16, 30, 34), True, "relu6"),
    "d12_batch_relu": (12, (2, 16, 40, 37), True, "relu"),
}


@contextlib.contextmanager
def forced(tile: int) -> Iterator[None]:
    """Every dilated conv the pass sees runs as Winograd of output tile ``tile``."""
    saved = winograd_convs.dilated_tile
    winograd_convs.dilated_tile = lambda node: tile  # type: ignore[assignment]
    try:
        yield
    finally:
        winograd_convs.dilated_tile = saved  # type: ignore[assignment]


@pytest.fixture(scope="module", params=[(name, tile) for name in sorted(CASES)
                                        for tile in (2, 4)], ids=lambda p: f"{p[0]}-F{p[1]}")
def compiled(request):  # type: ignore[no-untyped-def]
    """(graph, wasm, input, case, tile) of a case with the tile forced."""
    name, tile = request.param
    with forced(tile):
        return (*dilated_cases.compiled(CASES[name]), tile)


def test_the_conv_runs_as_dilated_transforms(compiled) -> None:  # type: ignore[no-untyped-def]
    graph, _, _, (dilation, *_), tile = compiled
    transforms = [n for n in graph.nodes if n.op in ("winograd_input", "winograd_output")]
    assert [(n.attrs["tile"], n.attrs["dilation"]) for n in transforms] == [(tile, dilation)] * 2
    assert all(n.attrs.get("dilation", 1) in (1, (1, 1)) for n in graph.nodes
               if n.op == "conv2d")


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_dilated_winograd_matches_torch_and_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    _, wasm, x, case, _ = compiled
    dilated_cases.assert_matches_torch_and_eager(wasm, x, case, kernels)


def test_dilated_winograd_on_two_threads_matches_one_thread(compiled) -> None:  # type: ignore[no-untyped-def]
    _, wasm, x, _, _ = compiled
    dilated_cases.assert_two_threads_match_one(wasm, x)


@pytest.mark.parametrize("dilation,expected", [(6, [(4, (6, 6))]), (12, [(4, (0, 0))]),
                                               (18, [(4, (18, 18))]), (24, [])])
def test_craft_dilations_take_the_transforms_that_pay(dilation: int, expected: list) -> None:
    """CRAFT's refiner's ASPP convs (64x64): dilated Winograd over the plane at 6 and 18;
    at 12 over the centre of ``trim_dilated_convs``' regions (padding 0); at 24 the regions
    keep less work than any tiles (``DILATED_COST``)."""
    x = dilated_cases.random(1, 16, 64, 64)
    graph = modelc.optimize(modelc.trace(dilated_cases.model(dilation, True, "relu"), (x,)))
    assert [(n.attrs["tile"], tuple(n.attrs["padding"])) for n in graph.nodes
            if n.op == "winograd_input" and n.attrs.get("dilation") == dilation] == expected


@pytest.fixture(scope="module")
def trimmed() -> tuple[modelc.Graph, bytes, np.ndarray, dilated_cases.Case]:
    """CRAFT's dilation 12: the regions, the centre one as dilated Winograd."""
    return dilated_cases.compiled((12, (2, 16, 64, 64), True, "relu"))


def test_the_trimmed_centre_runs_as_dilated_transforms(trimmed) -> None:  # type: ignore[no-untyped-def]
    graph = trimmed[0]
    assert [n.attrs["padding"] for n in graph.nodes if n.op == "winograd_input"] == [(0, 0)]
    assert len([n for n in graph.nodes if n.op == "conv2d"
                and n.attrs.get("dilation") == 12]) == 8  # the border regions


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_the_trimmed_centre_matches_torch_and_eager(trimmed, kernels: str) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    _, wasm, x, case = trimmed
    dilated_cases.assert_matches_torch_and_eager(wasm, x, case, kernels)
    dilated_cases.assert_two_threads_match_one(wasm, x)
