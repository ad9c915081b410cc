"""Every row of the op-case table (``tests/cases/ops.py``) on every executor: the numpy
interpreter on the optimised graph and the compiled wasm on each kernel provider, against
eager ``nn`` on the same inputs; and every op of ``modelc.ops`` has a row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from executors import EXECUTORS, Lambda
from ops import CASES, Case

import modelc
import nn
import runtime


def _feeds(case: Case) -> dict[str, np.ndarray]:
    return {f"input{i}": value for i, value in enumerate(case.inputs)}


@pytest.fixture(scope="module", params=sorted(CASES))
def row(request: pytest.FixtureRequest) -> tuple[Case, nn.Module, dict[str, Any]]:
    """A row, its model, and its compiled forms built once: the optimised graph and the
    wasm module."""
    case = CASES[request.param]
    model = Lambda(case.fn)
    graph = modelc.optimize(modelc.trace(model, case.inputs, dynamic=case.dynamic))
    return case, model, {"graph": graph,
                         "wasm": modelc.export(model, case.inputs, dynamic=case.dynamic)}


@pytest.mark.parametrize("executor", EXECUTORS)
def test_row_matches_eager_nn(row: tuple[Case, nn.Module, dict[str, Any]],
                              executor: str) -> None:
    case, model, compiled = row
    expected = np.asarray(model(*case.inputs))
    if executor == "interpreter":
        got = modelc.interpret(compiled["graph"], _feeds(case))["output0"]
    else:
        with runtime.load(compiled["wasm"], kernels=executor) as session:
            got = session.run(_feeds(case))["output0"]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=case.atol)


def test_every_op_has_a_row() -> None:
    covered: set[str] = set()
    for case in CASES.values():
        traced = modelc.trace(Lambda(case.fn), case.inputs, dynamic=case.dynamic)
        covered |= {node.op for node in traced.nodes}
        covered |= {node.op for node in modelc.optimize(traced).nodes}
    missing = sorted(set(modelc.ops.available()) - covered)
    assert not missing, f"ops with no row in tests/cases/ops.py: {missing}"


def test_every_row_is_named_after_an_op() -> None:
    names = modelc.ops.available()
    assert all(any(row == op or row.startswith(f"{op}_") for op in names) for row in CASES)
