"""Checks shared by the memory-planning tests: the planned arena, and outputs against eager."""

from __future__ import annotations

import numpy as np

import modelc
import nn
import runtime


def assert_live_values_nest(graph: modelc.Graph, skip_constants: bool = False) -> None:
    """Values alive at the same time (by node order) share arena bytes only when one's bytes
    hold the other's (a view, or a part placed inside its concat)."""
    position = {id(node): i for i, node in enumerate(graph.nodes)}
    outputs = {id(v) for v in graph.outputs.values()}
    spans = []
    for value in graph.values():
        if skip_constants and value.is_constant:
            continue
        start = -1 if value.producer is None else position[id(value.producer)]
        end = len(graph.nodes) if id(value) in outputs else \
            max((position[id(u)] for u in value.users), default=start)
        low = graph.meta["arena"][id(value)]
        spans.append((start, end, low, low + int(np.prod(value.shape)) * 4))
    for i, (f1, l1, lo1, hi1) in enumerate(spans):
        for f2, l2, lo2, hi2 in spans[i + 1:]:
            if not (l1 < f2 or l2 < f1) and lo1 < hi2 and lo2 < hi1:
                assert (lo1 <= lo2 and hi2 <= hi1) or (lo2 <= lo1 and hi1 <= hi2)


def outputs_matching_eager(wasm: bytes, kernels: str, model: nn.Module,
                           x: np.ndarray) -> list[np.ndarray]:
    """The outputs of ``wasm`` on ``kernels`` for input ``x``, each checked against the eager
    ``model``'s."""
    with runtime.load(wasm, kernels=kernels) as session:
        got = list(session.run({"input0": x}).values())
    for g, w in zip(got, model(x), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return got
