"""DepthToSpace / SpaceToDepth (both modes), ArgMax / ArgMin (int64, exactly equal), CumSum,
Trilu, GroupNormalization (opsets 18 and 21) and RMSNormalization (opset 23) from ONNX,
compiled to wasm and run on every kernel provider against onnxruntime; known values fold."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import ort_run
from single_node import Run, i64, r, single_node

import modelc

onnx = pytest.importorskip("onnx")

X = r(2, 8, 3, 4)
# NOTE: repeated values make ties, which select_last_index decides.
TIED = np.round(r(2, 5, 6) * 1.5).astype(np.float32)

# id: (op, operands, attrs, opset), as test_ops.CASES
CASES: dict[str, tuple] = {
    "depth_to_space_dcr": ("DepthToSpace", [Run(X)], {"blocksize": 2}, 13),
    "depth_to_space_crd": ("DepthToSpace", [Run(X)], {"blocksize": 2, "mode": "CRD"}, 13),
    "depth_to_space_opset11_default": ("DepthToSpace", [Run(r(1, 9, 2, 3))], {"blocksize": 3},
                                       11),
    "space_to_depth": ("SpaceToDepth", [Run(r(2, 3, 6, 4))], {"blocksize": 2}, 13),
    "cumsum_inner": ("CumSum", [Run(X), i64(1)], {}, 14),
    "cumsum_last_exclusive_reverse": ("CumSum", [Run(X), i64(-1)],
                                      {"exclusive": 1, "reverse": 1}, 14),
    "cumsum_exclusive": ("CumSum", [Run(X), i64(2)], {"exclusive": 1}, 11),
    "trilu_upper": ("Trilu", [Run(X)], {}, 14),
    "trilu_lower_k": ("Trilu", [Run(X), np.array(1, np.int64)], {"upper": 0}, 14),
    "trilu_upper_negative_k": ("Trilu", [Run(r(3, 5, 4)), np.array(-2, np.int64)], {}, 14),
    "group_norm_opset18": ("GroupNormalization", [Run(X), r(4), r(4)],
                           {"num_groups": 4, "epsilon": 1e-3}, 18),
    "group_norm_opset21": ("GroupNormalization", [Run(X), r(8), r(8)], {"num_groups": 2}, 21),
    "rms_norm_last": ("RMSNormalization", [Run(X), r(4)], {}, 23),
    "rms_norm_two_axes": ("RMSNormalization", [Run(X), r(3, 4)], {"axis": -2,
                                                                  "epsilon": 1e-3}, 23),
}

ARG_CASES: dict[str, tuple] = {
    "argmax_axis1": ("ArgMax", [Run(TIED)], {"axis": 1}, 13),
    "argmax_last_index_no_keepdims": ("ArgMax", [Run(TIED)],
                                      {"axis": -1, "keepdims": 0, "select_last_index": 1}, 13),
    "argmin_axis0": ("ArgMin", [Run(TIED)], {"axis": 0}, 11),
    "argmin_last_index": ("ArgMin", [Run(TIED)], {"axis": 2, "select_last_index": 1}, 13),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_in_wasm_matches_onnxruntime(case, check_wasm_against_ort):
    model, inputs = single_node(*CASES[case])
    # NOTE: onnx's shape inference leaves a function op's (GroupNormalization's) output
    # type undefined, which onnxruntime refuses.
    model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    check_wasm_against_ort(model, inputs)


@pytest.mark.parametrize("case", sorted(ARG_CASES))
def test_arg_ops_in_wasm_equal_onnxruntime(case):
    runtime = pytest.importorskip("runtime")
    model, inputs = single_node(*ARG_CASES[case])
    (want,) = ort_run(model, inputs).values()
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in ("relaxed", "simd128", "scalar", "host"):
        with runtime.load(wasm, kernels=kernels) as session:
            (got,) = session.run(inputs).values()
        assert got.dtype == np.int64 and got.shape == want.shape, kernels
        np.testing.assert_array_equal(got, want, err_msg=kernels)


@pytest.mark.parametrize("op, attrs, operands", [
    ("ArgMax", {"axis": 1, "select_last_index": 1}, [TIED]),
    ("ArgMin", {"axis": 2, "keepdims": 0}, [TIED]),
    ("CumSum", {"exclusive": 1, "reverse": 1}, [np.arange(12, dtype=np.int64).reshape(3, 4),
                                                 i64(1)]),
    ("Trilu", {"upper": 0}, [np.arange(12, dtype=np.int64).reshape(3, 4),
                             np.array(1, np.int64)]),
])
def test_known_values_fold_exactly(op, attrs, operands):
    model, _ = single_node(op, operands, attrs, 14)
    (got,) = modelc.from_onnx(model).outputs.values()
    (want,) = ort_run(model, {}).values()
    assert got.is_constant and got.data.dtype == want.dtype
    np.testing.assert_array_equal(got.data, want)


@pytest.mark.parametrize("layer", ["PixelShuffle", "PixelUnshuffle"])
def test_torch_pixel_shuffles_as_6d_transposes(layer, torch_to_onnx, check_wasm_against_ort):
    """torch exports them (PixelShuffle before opset 11) as Reshape, a 6-D Transpose and
    Reshape, which split_permutes runs as block moves."""
    torch = pytest.importorskip("torch")
    x = r(1, 8, 6, 4)
    model = torch_to_onnx(getattr(torch.nn, layer)(2), (torch.from_numpy(x),), ["x"], ["y"],
                          opset=9)
    assert any(len(n.attribute[0].ints) == 6 for n in onnx.load_from_string(model).graph.node
               if n.op_type == "Transpose")
    check_wasm_against_ort(model, {"x": x})


def test_depth_to_space_with_an_unknown_mode_is_refused():
    model, _ = single_node("DepthToSpace", [Run(X)], {"blocksize": 2}, 13)
    model.graph.node[0].attribute.append(onnx.helper.make_attribute("mode", "RDC"))
    with pytest.raises(modelc.CompileError, match="unknown mode 'RDC'; expected 'DCR' or "
                                                  "'CRD'"):
        modelc.from_onnx(model)


def test_group_norm_with_mismatched_scale_is_refused():
    model, _ = single_node("GroupNormalization", [Run(X), r(3), r(3)], {"num_groups": 4}, 18)
    with pytest.raises(modelc.CompileError, match="scale has 3 values; expected 4 .one per "
                                                  "group. or 8"):
        modelc.from_onnx(model)
