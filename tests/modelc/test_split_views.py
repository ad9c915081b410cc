"""A split's chunks as views of its input (``OpDef.output_views``, placed by ``plan_memory``):
which chunks share their input's bytes, a split input placed inside the concat its chunks
tile (YOLOv8's C2f block: no copy on either side), that no two values alive together share
bytes unless one lies inside the other, and the numbers on every kernel provider against
eager nn and torch."""

from __future__ import annotations

import numpy as np
import pytest
from arena_checks import assert_live_values_nest, outputs_matching_eager

import modelc
import nn
from modelc import ops
from nn import functional as F

PROVIDERS = ["relaxed", "simd128", "scalar", "host"]


class Chunks(nn.Module):
    """Splits of every kind: a C2f block (split, a conv on the second chunk, concat of all),
    chunks of a graph input, a chunk that is a graph output, chunks concatenated in another
    order, along an axis with more than 1 before it, and one kept alive after the concat."""

    def __init__(self) -> None:
        super().__init__()
        self.cv1 = nn.Conv2d(3, 8, 1)
        self.m = nn.Conv2d(4, 4, 3, padding=1)
        self.cv2 = nn.Conv2d(12, 5, 1)

    def forward(self, x):  # type: ignore[no-untyped-def]
        a, b = F.split(F.silu(self.cv1(x)), 4, 1)               # (1, 4, 6, 7) each
        c = F.silu(self.m(b))
        c2f = F.concat([a, b, c], 1)                             # (1, 12, 6, 7)
        y = self.cv2(c2f)
        first, rest = F.split(x, [1, 2], 1)                      # chunks of a graph input
        left, right = F.split(F.exp(y), [2, 3], 1)               # ``right`` is an output
        swapped = F.concat([b, a], 1)                            # tiles, but not in order
        h1, h2 = F.split(F.neg(y), [3, 3], 2)                    # rows: not one run
        return (y, first * 2.0, rest + 1.0, right, left - 1.0, swapped * 3.0, h2 - h1,
                a + 1.0)


def _x() -> np.ndarray:
    return np.random.default_rng(5).standard_normal((1, 3, 6, 7)).astype(np.float32)


def _model() -> Chunks:
    model = Chunks()
    rng = np.random.default_rng(6)
    for _, param in model.named_parameters():
        param[...] = rng.standard_normal(param.shape).astype(np.float32) * 0.5
    return model.eval()


def _inside(graph: modelc.Graph, inner: modelc.graph.Value, outer: modelc.graph.Value,
            offset: int) -> bool:
    slots, within = graph.meta["slots"], graph.meta["within"]
    return slots[id(inner)] == slots[id(outer)] and \
        within[id(inner)] == within[id(outer)] + offset


def _placed(graph: modelc.Graph) -> tuple[list[list[bool]], list[list[bool]]]:
    """For each split, whether each chunk lies in its input; for each concat, whether each
    part lies in its output (graph order)."""
    splits, concats = [], []
    for node in graph.nodes:
        if node.op == "split":
            views = ops.get("split").output_views(node)
            splits.append([k in views and _inside(graph, out, node.inputs[0], views[k])
                           for k, out in enumerate(node.outputs)])
        if node.op == "concat":
            slices = ops.get("concat").input_slices(node)
            concats.append([k in slices and _inside(graph, part, node.output, slices[k])
                            for k, part in enumerate(node.inputs)])
    return splits, concats


def test_chunks_are_views_and_a_tiled_split_input_sits_in_the_concat() -> None:
    graph = modelc.optimize(modelc.trace(_model(), (_x(),)))
    splits, concats = _placed(graph)
    c2f, graph_input, exp, rows = splits  # in graph order
    assert c2f == [True, True]
    assert graph_input == [True, True]
    assert exp == [True, False]  # ``right`` is a graph output: it stands alone
    assert rows == [False, False]  # along axis 2 the chunks are not runs of bytes
    block, swapped = concats
    assert block == [True, True, True]  # cv1's output written in place, no copy at all
    assert swapped == [False, False]  # a and b already sit in the block's concat


def test_values_alive_together_share_bytes_only_when_one_holds_the_other() -> None:
    graph = modelc.optimize(modelc.trace(_model(), (_x(),)))
    assert_live_values_nest(graph, skip_constants=True)


@pytest.fixture(scope="module")
def compiled() -> bytes:
    return modelc.export(_model(), (_x(),))


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_split_views_match_eager_and_torch(compiled: bytes, kernels: str) -> None:
    torch = pytest.importorskip("torch")
    model, x = _model(), _x()
    got = outputs_matching_eager(compiled, kernels, model, x)
    t, fn = torch.from_numpy, torch.nn.functional
    a, b = torch.split(fn.silu(fn.conv2d(t(x), t(model.cv1.weight), t(model.cv1.bias))), 4, 1)
    c = fn.silu(fn.conv2d(b, t(model.m.weight), t(model.m.bias), padding=1))
    y = fn.conv2d(torch.cat([a, b, c], 1), t(model.cv2.weight), t(model.cv2.bias))
    np.testing.assert_allclose(got[0], y.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[5], torch.cat([b, a], 1).numpy() * 3.0, rtol=1e-5, atol=1e-5)
