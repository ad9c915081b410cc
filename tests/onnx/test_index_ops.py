"""GatherND and ScatterND at indices computed at run time (issue #19), compiled to wasm and
run on every kernel provider against onnxruntime, and their refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from executors import PROVIDERS

sys.path.insert(0, str(Path(__file__).parent))
from single_node import Run, r, single_node, wasm_and_onnxruntime

import modelc


def i64s(*rows: object) -> np.ndarray:
    return np.array(rows, np.int64)


# id: (op, operands, attrs, opset), as test_ops.CASES
CASES: dict[str, tuple] = {
    "gather_nd_rows": ("GatherND", [Run(r(4, 3, 2)), Run(i64s([1], [-1], [0]))], {}, 13),
    "gather_nd_elements": ("GatherND", [Run(r(4, 3, 2)), Run(i64s([[1, 2, 0]],
                                                                    [[3, -1, 1]]))], {}, 13),
    "gather_nd_known_table": ("GatherND", [r(4, 3), Run(i64s([1, 2], [0, 0], [3, -3]))],
                              {}, 13),
    "gather_nd_batch_dims": ("GatherND", [Run(r(2, 4, 3)), Run(i64s([[1], [3]], [[0], [2]]))],
                             {"batch_dims": 1}, 13),
    "gather_nd_two_batch_dims": ("GatherND", [Run(r(2, 3, 4)), Run(np.array(
        [[[1], [3], [0]], [[2], [2], [-1]]], np.int64))], {"batch_dims": 2}, 13),
    "gather_runtime_rows": ("Gather", [Run(r(5, 3)), Run(i64s([4, -1], [0, 2]))], {}, 13),
    "gather_runtime_columns": ("Gather", [Run(r(2, 5, 3)), Run(i64s(1, -5, 4))],
                               {"axis": 1}, 13),
    "gather_runtime_int_data": ("Gather", [Run(np.arange(12, dtype=np.int64).reshape(4, 3)),
                                           Run(np.array([[3], [-4]], np.int32))],
                                {"axis": 0}, 13),
    "compress_axis": ("Compress", [Run(r(3, 5, 2)), np.array([1, 0, 1, 1], bool)],
                      {"axis": 1}, 11),
    "compress_flat": ("Compress", [Run(r(3, 4)), np.array([0, 1, 0, 0, 1, 1, 0, 1], bool)],
                      {}, 11),
    "scatter_nd_rows_repeated": ("ScatterND", [Run(r(4, 3)), Run(i64s([1], [3], [1])),
                                               Run(r(3, 3))], {}, 13),
    "scatter_nd_elements_negative": ("ScatterND", [Run(r(2, 3, 2)), Run(i64s(
        [0, 2, 1], [1, -3, 0])), Run(r(2))], {}, 13),
    "scatter_nd_known_updates": ("ScatterND", [Run(r(5, 2)), Run(i64s([4], [0])), r(2, 2)],
                                 {}, 13),
    "scatter_nd_add_repeated": ("ScatterND", [Run(r(4, 3)), Run(i64s([1], [3], [1])),
                                              Run(r(3, 3))], {"reduction": "add"}, 16),
    "scatter_nd_add_known_indices": ("ScatterND", [Run(r(3, 2, 2)), i64s([[2, 1], [2, 1]]),
                                                   Run(r(1, 2, 2))], {"reduction": "add"}, 18),
}


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_runtime_index_op_runs_in_wasm_as_onnxruntime(case: str, kernels: str) -> None:
    for got, want in wasm_and_onnxruntime(CASES[case], kernels):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_an_index_outside_the_data_traps() -> None:
    runtime = pytest.importorskip("runtime")
    model, feeds = single_node("GatherND", [Run(r(4, 3)), Run(i64s([1], [0]))], {}, 13)
    with runtime.load(modelc.export(modelc.from_onnx(model))) as session:
        with pytest.raises(runtime.Trap, match="f32_gather"):
            session.run({"in0": feeds["in0"], "in1": i64s([1], [4])})


@pytest.mark.parametrize("spec, match", [
    (("GatherND", [Run(np.arange(6, dtype=np.int64).reshape(3, 2)), Run(i64s([1], [0]))], {},
      13), "GatherND at run-time indices moves float32 data, got int64"),
    (("ScatterND", [Run(r(4, 3)), Run(i64s(*[[1]] * 65)), Run(r(65, 3))],
      {"reduction": "mul"}, 16), "reduction 'mul' of 65 updates: at most 64 multiply"),
])
def test_runtime_index_refusals_name_the_node(spec: tuple, match: str) -> None:
    model, _ = single_node(*spec)
    with pytest.raises(modelc.CompileError, match=rf"'the_{spec[0].lower()}'.*{match}"):
        modelc.from_onnx(model)


def test_symbolic_data_dims_are_refused() -> None:
    model, _ = single_node("GatherND", [Run(r(4, 3)), Run(i64s([1], [0]))], {}, 13)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "rows"
    with pytest.raises(modelc.CompileError, match=r"needs fixed data dims, got \['rows', 3\]; "
                                                  "fix them with input_shapes"):
        modelc.from_onnx(model)
