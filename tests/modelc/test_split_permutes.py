"""split_permutes: permutes of more than 4 unmergeable axes (6-D PixelShuffle transposes,
5-D ones beside a batch of 1) run as block moves of at most 4 merged axes, exactly, on
every kernel provider (torch's exports of them against onnxruntime are in
tests/onnx/test_layout_ops.py)."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import runtime
from modelc.passes.split_permutes import _block_moves
from nn import functional as F

# (shape, dims, number of block moves)
CASES = [
    ((1, 3, 2, 2, 4, 5), (0, 1, 4, 2, 5, 3), 2),  # torch's pixel_shuffle, batch 1
    ((2, 3, 4, 2, 5, 2), (0, 1, 3, 5, 2, 4), 2),  # pixel_unshuffle
    ((2, 3, 4, 5, 6), (4, 2, 0, 3, 1), 3),
    ((1, 2, 3, 1, 4, 5), (5, 3, 1, 4, 0, 2), 2),
    ((2, 3, 4, 5, 6, 7), (5, 4, 3, 2, 1, 0), 5),
]


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("shape, dims, moves", CASES, ids=[str(c[1]) for c in CASES])
def test_wide_permute_runs_as_block_moves(shape, dims, moves, kernels) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    model = Lambda(lambda t: F.permute(t, dims))
    graph = modelc.optimize(modelc.trace(model, (x,)))
    assert [n.op for n in graph.nodes] == ["reshape"] + ["permute"] * moves + ["reshape"]
    with runtime.load(modelc.export(model, (x,)), kernels=kernels) as session:
        np.testing.assert_array_equal(session.run({"input0": x})["output0"],
                                      np.transpose(x, dims))


def test_symbolic_batch_stays_its_own_axis() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 2, 2, 4, 5)).astype(np.float32)
    model = Lambda(lambda t: F.permute(t, (0, 1, 4, 2, 5, 3)))
    wasm = modelc.export(model, (x,), dynamic={"input0": {0: ("batch", 1, 4)}})
    with runtime.load(wasm) as session:
        for batch in (1, 3):
            inputs = np.concatenate([x, x])[:batch]
            np.testing.assert_array_equal(session.run({"input0": inputs})["output0"],
                                          np.transpose(inputs, (0, 1, 4, 2, 5, 3)))


@pytest.mark.parametrize("target", [[0, 3, 1, 4, 2], [4, 3, 2, 1, 0], [1, 0, 3, 2, 4]])
def test_block_moves_reach_the_target_with_at_most_4_runs_each(target) -> None:  # type: ignore[no-untyped-def]
    current = list(range(len(target)))
    for dims in _block_moves(target):
        runs = 1 + sum(b != a + 1 for a, b in zip(dims, dims[1:]))
        assert runs <= 4, dims
        current = [current[d] for d in dims]
    assert current == target
