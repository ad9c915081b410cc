"""``chain_max_pools``: SPP's stride-1 "same" max pools of one input (5x5, 9x9, 13x13)
become a chain of 5x5 pools, and other pools stay; the results equal eager nn's and torch's
to the bit on every kernel provider, NaN and -inf inputs included."""

from __future__ import annotations

import numpy as np
import pytest

import modelc
import nn
import runtime
from modelc.ops._pool import window
from nn import functional as F

PROVIDERS = ["relaxed", "simd128", "scalar", "host"]


class Pyramid(nn.Module):
    """SPP (5, 9, 13) of x; of y, non-square windows that grow on both axes (3x5 then 5x9)
    and a window that shrinks after them (kept); a stride-2 pool of x (kept)."""

    def forward(self, x):  # type: ignore[no-untyped-def]
        spp = F.concat([x] + [F.max_pool2d(x, k, 1, k // 2) for k in (5, 9, 13)], 1)
        y = x * 1.5
        wide = [F.max_pool2d(y, k, 1, (k[0] // 2, k[1] // 2)) for k in ((3, 5), (5, 9), (3, 3))]
        return spp + 1.0, *(w * 2.0 for w in wide), F.max_pool2d(x, 3, 2, 1) - 1.0


def _x() -> np.ndarray:
    x = np.random.default_rng(11).standard_normal((1, 3, 13, 15)).astype(np.float32)
    x[0, 0, 6, 7], x[0, 1, 0, 0], x[0, 2, 12, 14] = np.nan, -np.inf, np.inf
    return x


def _kernels(graph: modelc.Graph) -> list[tuple[tuple[int, int], str]]:
    """Each max pool's kernel and the op that makes what it reads (x: the graph input)."""
    return [(window(node.attrs)[0], node.inputs[0].producer.op if node.inputs[0].producer else "x")
            for node in graph.nodes if node.op == "max_pool2d"]


def test_growing_same_size_pools_become_a_chain() -> None:
    graph = modelc.optimize(modelc.trace(Pyramid(), (_x(),)))
    assert _kernels(graph) == [((5, 5), "x"), ((5, 5), "max_pool2d"), ((5, 5), "max_pool2d"),
                               ((3, 5), "mul"), ((3, 5), "max_pool2d"), ((3, 3), "mul"),
                               ((3, 3), "x")]


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_chained_pools_equal_eager_and_torch_to_the_bit(kernels: str) -> None:
    torch = pytest.importorskip("torch")
    x = _x()
    with runtime.load(modelc.export(Pyramid(), (x,)), kernels=kernels) as session:
        got = list(session.run({"input0": x}).values())
    for g, w in zip(got, Pyramid()(x), strict=True):
        np.testing.assert_array_equal(g, w)
    pools = [torch.nn.functional.max_pool2d(torch.from_numpy(x), k, 1, k // 2) for k in (5, 9, 13)]
    np.testing.assert_array_equal(got[0], torch.cat([torch.from_numpy(x), *pools], 1) + 1.0)
