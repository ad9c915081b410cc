"""Forwards written with ndarray methods, indexing, operators and numpy calls (the cases of
``forward_cases.py``): traced, compiled, and run on every kernel provider and on the
interpreter at two sizes of the symbolic dim, against the same function run eagerly on
numpy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from executors import PROVIDERS, Lambda
from forward_cases import CASES, Case

import modelc
import runtime


def _dynamic(case: Case) -> dict | None:
    return {"input0": case.dynamic} if case.dynamic else None


def assert_matches(got: np.ndarray, ref: Any, name: str) -> None:
    """Same shape and values; the dtype numpy gives, or float32 where numpy promotes a
    Python float to float64 (``np.where(c, 1.0, 0.0)``), as a compiled model computes."""
    ref = np.asarray(ref)
    assert got.shape == ref.shape, name
    demoted = np.dtype(np.float32) if ref.dtype == np.float64 else ref.dtype
    assert got.dtype in {ref.dtype, demoted}, name
    if ref.dtype.kind in "biu":
        np.testing.assert_array_equal(got, ref, err_msg=name)
    else:
        scale = max(float(np.abs(ref).max(initial=0.0)), 1.0)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * scale, err_msg=name)


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request: pytest.FixtureRequest) -> tuple[str, Case, bytes]:
    case = CASES[request.param]
    model = Lambda(case.fn)
    wasm = modelc.export(model, (case.inputs(),), dynamic=_dynamic(case))
    return request.param, case, wasm


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_compiled_forward_matches_eager(compiled: tuple[str, Case, bytes], kernels: str) -> None:
    name, case, wasm = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        for seed, size in enumerate(case.sizes):
            x = case.inputs(size, seed + 1)
            assert_matches(session.run(x)["output0"], case.fn(x), f"{name} at {size}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreted_forward_matches_eager(name: str) -> None:
    case = CASES[name]
    graph = modelc.trace(Lambda(case.fn), (case.inputs(),), dynamic=_dynamic(case))
    for seed, size in enumerate(case.sizes):
        x = case.inputs(size, seed + 1)
        with np.errstate(all="ignore"):  # NOTE: some cases make NaN and inf on purpose
            got = modelc.interpret(graph, {"input0": x})["output0"]
        assert_matches(got, case.fn(x), f"{name} at {size}")
