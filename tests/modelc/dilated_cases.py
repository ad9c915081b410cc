"""What the dilated-conv pass tests share (test_phase_dilated_convs, test_trim_dilated_convs):
one weight, the model of a case, its compiled forms (with Winograd over the dilated plane or
without), torch's reference and the thread check."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np
from executors import Lambda

import modelc
import runtime
from nn import functional as F

winograd_convs = importlib.import_module("modelc.passes.winograd_convs")

RNG = np.random.default_rng(11)


def random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


W = random(24, 16, 3, 3)
B = random(24)

Case = tuple[Any, tuple[int, ...], bool, str | None]
"""(dilation, input shape, bias, activation)."""


def model(dilation: Any, bias: bool, activation: str | None) -> Lambda:
    """A 'same' dilated 3x3 conv of ``W`` (and ``B``), then ``activation``."""
    def forward(x: np.ndarray) -> np.ndarray:
        y = F.conv2d(x, W, B if bias else None, padding=dilation, dilation=dilation)
        return getattr(F, activation)(y) if activation else y
    return Lambda(forward)


@contextlib.contextmanager
def dilated_winograd(on: bool) -> Iterator[None]:
    """Compile with ``winograd_convs.DILATED`` set to ``on`` (off: the conv goes to the
    regions or the phases as it would without the dilated transforms)."""
    saved = winograd_convs.DILATED
    winograd_convs.DILATED = on
    try:
        yield
    finally:
        winograd_convs.DILATED = saved


def compiled(case: Case, dilated: bool = True) -> tuple[modelc.Graph, bytes, np.ndarray, Case]:
    """(optimised graph, wasm, input, case) of a case, Winograd over the dilated plane
    allowed or not (``dilated``)."""
    dilation, shape, bias, activation = case
    x = random(*shape)
    conv = model(dilation, bias, activation)
    with dilated_winograd(dilated):
        return modelc.optimize(modelc.trace(conv, (x,))), modelc.export(conv, (x,)), x, case


def torch_reference(x: np.ndarray, case: Case) -> tuple[np.ndarray, np.ndarray]:
    """torch's conv output before and after the activation."""
    import torch
    dilation, _, bias, activation = case
    with torch.no_grad():
        y = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(W),
                                       torch.from_numpy(B) if bias else None,
                                       padding=dilation, dilation=dilation)
        out = getattr(torch.nn.functional, activation)(y) if activation else y
    return y.numpy(), out.numpy()


def assert_two_threads_match_one(wasm: bytes, x: np.ndarray) -> None:
    got = []
    for threads in (1, 2):
        with runtime.load(wasm, threads=threads) as session:
            got.append(session.run({"input0": x})["output0"])
    np.testing.assert_array_equal(got[1], got[0])


def assert_matches_torch_and_eager(wasm: bytes, x: np.ndarray, case: Case, kernels: str,
                                   winograd: bool = True) -> None:
    """``wasm`` run on ``kernels`` matches torch's conv and the eager model of ``case``: within
    F(4x4, 3x3)'s documented tolerance of the conv's own output (test_winograd_convs) when
    ``winograd``, else 1e-4."""
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({"input0": x})["output0"]
    conv, expected = torch_reference(x, case)
    atol = 2e-5 * float(np.abs(conv).max()) if winograd else 1e-4
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=atol)
    np.testing.assert_allclose(got, model(case[0], case[2], case[3])(x), rtol=1e-4, atol=atol)
