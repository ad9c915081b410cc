"""ONNX's operator conformance cases (``onnx.backend.test.case.node``) through wasmnn, one
test per onnx case module, plus the model folders of ``onnx/backend/test/data``
(``tests/cases/conformance.py`` runs and sorts them).

Every case must be out of scope or have the status ``conformance_expected.txt`` lists for
it (``pass`` when it is not listed): passing cases pass on the relaxed kernels against
onnx's numpy reference, refused ones stay refused with a compiler error naming their op,
opset or a tensor (not a crash), and a listed case that starts passing fails too, so the
list only shrinks. No status hides a wrong result: ``WRONG`` is never listed. The first
passing case of each module also runs on simd128 and scalar. Regenerate the list with
``python tests/cases/conformance.py --expectations > tests/onnx/conformance_expected.txt``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnx")
import conformance

EXPECTED = dict(line.split() for line in
                Path(__file__).with_name("conformance_expected.txt").read_text().splitlines())


def test_no_expectation_is_wrong():
    assert conformance.WRONG not in EXPECTED.values()


@pytest.mark.parametrize("module", [*conformance.modules(), *conformance.DATA_KINDS])
def test_onnx_cases_have_their_expected_status(module):
    problems = []
    sampled = False
    cases = (conformance.collect_data(module) if module in conformance.DATA_KINDS
             else conformance.collect([module]))
    for case in cases:
        outcome = conformance.run_case(case)
        want = EXPECTED.get(case.name, conformance.PASS)
        if outcome.status not in (want, conformance.OUT):
            problems.append(f"{case.name}: {outcome.status} (expected {want}) {outcome.detail}")
        elif outcome.status == conformance.PASS and not sampled:
            sampled = True
            problems += [f"{case.name} on {kernels}: {other.status} {other.detail}"
                         for kernels in ("simd128", "scalar")
                         for other in [conformance.run_case(case, kernels)]
                         if other.status != conformance.PASS]
    assert not problems, "\n".join(problems)
