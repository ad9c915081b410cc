"""A concat's parts computed straight into its output (``OpDef.input_slices``, placed by
``plan_memory``): which parts go in place, that no two values alive together share bytes
unless one lies inside the other, and the numbers on every kernel provider against eager nn
and torch."""

from __future__ import annotations

import numpy as np
import pytest
from arena_checks import assert_live_values_nest, outputs_matching_eager

import modelc
import nn
from nn import functional as F

PROVIDERS = ["relaxed", "simd128", "scalar", "host"]


class Branches(nn.Module):
    """Parts of every kind: conv outputs, a nested concat, a reshape view, the same value
    twice, a value used again after the concat, a graph input, a graph output, a constant."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv2d(3, 5, 1)
        self.c = nn.Conv2d(9, 2, 1)
        self.register_buffer("bias", np.linspace(-1, 1, 2 * 6 * 7).astype(np.float32)
                             .reshape(1, 2, 6, 7))

    def forward(self, x):  # type: ignore[no-untyped-def]
        a = F.relu(self.a(x))                                   # (1, 4, 6, 7)
        b = F.sigmoid(self.b(x))                                # (1, 5, 6, 7)
        inner = F.concat([a, b], 1)                             # (1, 9, 6, 7)
        flat = F.reshape(F.tanh(F.reshape(b, (1, 5, 42))), (1, 5, 6, 7))
        c = self.c(inner)                                       # (1, 2, 6, 7)
        outer = F.concat([inner, c, x, flat, c, self.bias], 1)  # (1, 23, 6, 7)
        again = F.concat([F.neg(a), a], 1)                      # (1, 8, 6, 7)
        e = F.exp(b)
        twice = F.concat([e, e], 1)                             # (1, 10, 6, 7)
        rows = F.concat([F.neg(a), a], 2)                       # (1, 4, 12, 7)
        return outer, c, again + 1.0, twice * 2.0, rows + 1.0, F.exp(a)


def _x() -> np.ndarray:
    return np.random.default_rng(3).standard_normal((1, 3, 6, 7)).astype(np.float32)


def _model() -> Branches:
    model = Branches()
    rng = np.random.default_rng(4)
    for _, param in model.named_parameters():
        param[...] = rng.standard_normal(param.shape).astype(np.float32) * 0.5
    return model.eval()


def _placed(graph: modelc.Graph) -> dict[str, list[bool]]:
    """For each concat (by output name), whether each part lies in place in the output."""
    slots, within = graph.meta["slots"], graph.meta["within"]
    placed = {}
    for node in graph.nodes:
        if node.op == "concat":
            out, start, flags = node.output, 0, []
            for part in node.inputs:
                run = int(np.prod(out.shape[node.attrs.get("dim", 0) + 1:])) * 4
                flags.append(not part.is_constant and slots[id(part)] == slots[id(out)]
                             and within[id(part)] == within[id(out)] + start * run)
                start += part.shape[node.attrs.get("dim", 0)]
            placed[node.output.name] = flags
    return placed


def test_parts_go_in_place_unless_they_must_stand_alone() -> None:
    graph = modelc.optimize(modelc.trace(_model(), (_x(),)))
    inner, outer, again, twice, rows = _placed(graph).values()  # in graph order
    assert inner == [True, True]
    # x is a graph input, c a graph output, bias a constant
    assert outer == [True, False, False, True, False, False]
    assert again == [True, False]  # a is already in ``inner``
    assert twice == [True, False]  # one storage, one place
    assert rows == [False, False]  # along axis 2 the parts are not contiguous runs


def test_values_alive_together_share_bytes_only_when_one_holds_the_other() -> None:
    graph = modelc.optimize(modelc.trace(_model(), (_x(),)))
    assert_live_values_nest(graph)


@pytest.fixture(scope="module")
def compiled() -> bytes:
    return modelc.export(_model(), (_x(),))


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_in_place_concats_match_eager_and_torch(compiled: bytes, kernels: str) -> None:
    torch = pytest.importorskip("torch")
    model, x = _model(), _x()
    got = outputs_matching_eager(compiled, kernels, model, x)
    t = torch.from_numpy
    a = torch.relu(torch.nn.functional.conv2d(t(x), t(model.a.weight), t(model.a.bias), padding=1))
    b = torch.sigmoid(torch.nn.functional.conv2d(t(x), t(model.b.weight), t(model.b.bias)))
    inner = torch.cat([a, b], 1)
    c = torch.nn.functional.conv2d(inner, t(model.c.weight), t(model.c.bias))
    outer = torch.cat([inner, c, t(x), torch.tanh(b), c, t(model.bias)], 1)
    np.testing.assert_allclose(got[0], outer.numpy(), rtol=1e-5, atol=1e-5)
