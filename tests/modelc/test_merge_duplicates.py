"""``merge_duplicates``: a node repeating an earlier one (YOLOv5's Focus slices the same rows
twice) is dropped and its users read the first; nodes that differ in an attribute, an
input or the inputs' order stay, and so does a repeat that is a graph output; the numbers on
every kernel provider against eager nn and torch."""

from __future__ import annotations

import numpy as np
import pytest

import modelc
import nn
import runtime
from nn import functional as F

PROVIDERS = ["relaxed", "simd128", "scalar", "host"]


class Focus(nn.Module):
    """YOLOv5's Focus (four 2x2 phases through two row slices each), repeated divisions in
    both operand orders, a pad repeated with another value, and a repeat that is an
    output."""

    def forward(self, x):  # type: ignore[no-untyped-def]
        phases = [F.slice(F.slice(x, 2, r, None, 2), 3, c, None, 2) for r, c in
                  ((0, 0), (1, 0), (0, 1), (1, 1))]
        y = F.exp(x)
        ratios = F.div(x, y) + F.div(x, y) + F.div(y, x)
        pads = F.pad(x, (1, 1), value=0.0) - F.pad(x, (1, 1), value=1.0)
        return F.concat(phases, 1), ratios, pads, F.exp(x)


def _x() -> np.ndarray:
    return np.random.default_rng(12).standard_normal((1, 2, 6, 8)).astype(np.float32)


def test_repeated_nodes_merge_and_the_rest_stay() -> None:
    graph = modelc.optimize(modelc.trace(Focus(), (_x(),)))
    ops = [node.op for node in graph.nodes]
    assert ops.count("slice") == 6  # two row slices, four column slices
    assert ops.count("div") == 2  # x / y once, y / x once
    assert ops.count("pad") == 2  # pads with different values
    assert ops.count("exp") == 2  # the repeat is a graph output


@pytest.fixture(scope="module")
def compiled() -> bytes:
    return modelc.export(Focus(), (_x(),))


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_merged_graph_matches_eager_and_torch(compiled: bytes, kernels: str) -> None:
    torch = pytest.importorskip("torch")
    x = _x()
    with runtime.load(compiled, kernels=kernels) as session:
        got = list(session.run({"input0": x}).values())
    for g, w in zip(got, Focus()(x), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    t = torch.from_numpy(x)
    focus = torch.cat([t[..., r::2, c::2] for r, c in ((0, 0), (1, 0), (0, 1), (1, 1))], 1)
    np.testing.assert_array_equal(got[0], focus.numpy())


class Masks(nn.Module):
    """Two layers' causal masks over a symbolic sequence, as an exporter repeats them: a
    ``full`` of ones and a ``tril`` each; casts to two types stay apart."""

    def forward(self, x):  # type: ignore[no-untyped-def]
        seq = x.shape[1]
        masks = [F.tril(F.full((seq, seq), 1.0)) for _ in range(2)]
        casts = F.cast(F.cast(x, np.int32), np.float32) + F.cast(F.cast(x, np.int64),
                                                                  np.float32)
        return F.matmul(F.reshape(x, (seq, 1)) * masks[0], masks[1]) + casts


def test_repeated_masks_over_a_symbolic_dim_merge() -> None:
    x = np.arange(5, dtype=np.float32)[None]
    graph = modelc.optimize(modelc.trace(Masks(), (x,), dynamic={"input0": {1: ("s", 1, 9)}}))
    ops = [node.op for node in graph.nodes]
    assert ops.count("full") == 1 and ops.count("le") == 1, ops
    assert ops.count("cast") == 4, ops  # to int32 and int64, each back to float32
    wasm = modelc.export(Masks(), (x,), dynamic={"input0": {1: ("s", 1, 9)}})
    with runtime.load(wasm) as session:
        for length in (1, 4, 9):
            x = np.random.default_rng(length).standard_normal((1, length)).astype(np.float32)
            np.testing.assert_allclose(session.run(x)["output0"], Masks()(x), rtol=1e-5)
