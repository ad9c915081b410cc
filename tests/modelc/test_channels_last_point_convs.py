"""channels_last_point_convs: 1x1 convs on small planes as linears over channels-last rows,
transposed once at a chain's entry and once at its exit, against eager nn (and torch) on
every kernel provider and on two threads: an SVTR-like block (depthwise, conv + gelu, conv +
the block's input), two convs sharing their input with a converted conv's output also a
graph output, a channels-last input permuted to NCHW, and the convs the rule leaves to the
conv kernels (large planes, little work, a lone conv)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import runtime
from modelc.passes import PIPELINE, optimize
from nn import functional as F

RNG = np.random.default_rng(7)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


DEPTHWISE = _x(64, 1, 3, 3)
EXPAND, SHRINK = _x(256, 64, 1, 1) / 8, _x(64, 256, 1, 1) / 16
BIAS = _x(256)


def _svtr_block(x: Any) -> Any:
    """depthwise -> 1x1 64->256 + gelu -> 1x1 256->64 + the depthwise's output -> depthwise."""
    d = F.conv2d(x, DEPTHWISE, BIAS[:64], padding=1, groups=64)
    h = F.gelu(F.conv2d(d, EXPAND, BIAS))
    y = F.conv2d(h, SHRINK, None) + d
    return F.relu(F.conv2d(y, DEPTHWISE, None, padding=1, groups=64))


def _shared_input(x: Any) -> Any:
    """two 1x1 convs of x; the first's output is returned and feeds a third."""
    a = F.relu(F.conv2d(x, EXPAND, BIAS))
    b = F.conv2d(F.hardswish(F.conv2d(x, EXPAND, None)), SHRINK, BIAS[:64])
    return a, F.silu(F.conv2d(a, SHRINK, None) + b)


# name: (model, example input, dynamic axes, linears, permutes)
CASES = {
    "svtr_block_batch": (Lambda(_svtr_block), _x(2, 64, 6, 8),
                         {"input0": {0: ("batch", 1, 3)}}, 2, 2),
    "shared_input": (Lambda(_shared_input), _x(1, 64, 3, 20), {}, 4, 3),
    # a channels-last input moved to NCHW: the conv reads it as it is
    "channels_last_input": (Lambda(lambda x: F.relu(F.conv2d(F.permute(x, (0, 3, 1, 2)),
                                                             EXPAND, BIAS))),
                            _x(1, 5, 8, 64), {}, 1, 1),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    model, x, dynamic, _, _ = CASES[request.param]
    return model, modelc.export(model, (x,), dynamic=dynamic), x


def _outputs(session: runtime.Session, x: np.ndarray) -> list[np.ndarray]:
    got = session.run({"input0": x})
    return [got[name] for name in sorted(got)]


def _expected(model: Lambda, x: np.ndarray) -> list[np.ndarray]:
    out = model(x)
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_point_convs_as_rows_match_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    model, wasm, x = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        pairs = list(zip(_outputs(session, x), _expected(model, x)))
        if x.shape[0] > 1:  # the dynamic batch at one image too
            pairs += zip(_outputs(session, x[:1]), _expected(model, x[:1]))
    for got, expected in pairs:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_point_convs_as_rows_on_two_threads(compiled) -> None:  # type: ignore[no-untyped-def]
    model, wasm, x = compiled
    with runtime.load(wasm, threads=2) as session:
        for got, expected in zip(_outputs(session, x), _expected(model, x)):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_the_block_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    fn = torch.nn.functional
    model, x = CASES["svtr_block_batch"][:2]
    with runtime.load(modelc.export(model, (x,))) as session:
        got = session.run({"input0": x})["output0"]
    t = {name: torch.from_numpy(a) for name, a in (("dw", DEPTHWISE), ("e", EXPAND),
                                                   ("s", SHRINK), ("b", BIAS))}
    with torch.no_grad():
        d = fn.conv2d(torch.from_numpy(x), t["dw"], t["b"][:64], padding=1, groups=64)
        y = fn.conv2d(fn.gelu(fn.conv2d(d, t["e"], t["b"])), t["s"]) + d
        expected = fn.relu(fn.conv2d(y, t["dw"], padding=1, groups=64)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(CASES))
def test_chains_transpose_at_their_ends_only(name: str) -> None:
    model, x, _, linears, permutes = CASES[name]
    graph = optimize(modelc.trace(model, (x,)), PIPELINE)
    ops = [n.op for n in graph.nodes]
    assert ops.count("linear") == linears and ops.count("permute") == permutes
    assert all(n.named_inputs()["weight"].shape[2:] != (1, 1)
               for n in graph.nodes if n.op == "conv2d")


@pytest.mark.parametrize("shape, first, second", [
    ((1, 64, 24, 24), EXPAND, SHRINK),  # 576 pixels
    ((1, 3, 6, 8), _x(4, 3, 1, 1), _x(3, 4, 1, 1))])  # 12 multiply-adds a pixel
def test_large_planes_and_little_work_stay_convs(shape, first, second) -> None:  # type: ignore[no-untyped-def]
    model = Lambda(lambda x: F.conv2d(F.relu(F.conv2d(x, first, None)), second, None))
    graph = optimize(modelc.trace(model, (_x(*shape),)), PIPELINE)
    assert [n.op for n in graph.nodes] == ["conv2d", "conv2d"]


def test_a_lone_conv_between_depthwise_convs_stays_a_conv() -> None:
    wide = _x(256, 1, 3, 3)
    model = Lambda(lambda x: F.conv2d(F.conv2d(F.conv2d(x, DEPTHWISE, None, padding=1, groups=64),
                                               EXPAND, None), wide, None, padding=1, groups=256))
    graph = optimize(modelc.trace(model, (_x(1, 64, 6, 8),)), PIPELINE)
    assert [n.op for n in graph.nodes] == ["conv2d"] * 3
