"""ONNX's operator conformance cases (``onnx.backend.test.case.node``) through wasmnn, one
test per onnx case module (``tests/cases/conformance.py`` runs and sorts them).

Every case must pass on the relaxed kernels (outputs against onnx's numpy reference), be
out of scope, or be one of the cases listed in ``conformance_refused.txt`` and refused with
a compiler error naming its op, opset or a tensor; a listed case that passes fails too, so
the list only shrinks. The first passing case of each module also runs on simd128 and
scalar. Regenerate the list with
``python tests/cases/conformance.py --list refused > tests/onnx/conformance_refused.txt``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnx")
import conformance

REFUSED = frozenset(Path(__file__).with_name("conformance_refused.txt").read_text().split())


@pytest.mark.parametrize("module", conformance.modules())
def test_onnx_cases_pass_or_are_refused_by_name(module):
    problems = []
    sampled = False
    for case in conformance.collect([module]):
        outcome = conformance.run_case(case)
        want = conformance.REFUSED if case.name in REFUSED else conformance.PASS
        if outcome.status in (want, conformance.OUT):
            if outcome.status == conformance.PASS and not sampled:
                sampled = True
                problems += [f"{case.name} on {kernels}: {other.detail}"
                             for kernels in ("simd128", "scalar")
                             for other in [conformance.run_case(case, kernels)]
                             if other.status != conformance.PASS]
            continue
        problems.append(f"{case.name}: {outcome.status} (expected {want}) {outcome.detail}")
    assert not problems, "\n".join(problems)
