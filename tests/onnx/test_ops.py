"""One-node ONNX models per op and attribute variant, imported and compared with
onnxruntime: one row per case (op, operands, attributes, opset). The integer, mask and
narrow-dtype cases live in test_integer_ops.py and test_narrow_integers.py, the cases run
in wasm on every kernel provider in test_wasm_ops.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from executors import PROVIDERS

sys.path.insert(0, str(Path(__file__).parent))
from single_node import Run, bools, f32, i64, r, single_node, wasm_and_onnxruntime

onnx = pytest.importorskip("onnx")

_rng = np.random.default_rng(0)

# id: (op, operands (None = omitted), attrs, opset[, number of outputs])
CASES: dict[str, tuple] = {
    "conv_1d": ("Conv", [Run(r(1, 2, 9)), r(4, 2, 3), r(4)], {"pads": [1, 2]}, 13),
    "conv_same_upper_stride2": ("Conv", [Run(r(1, 3, 7, 8)), r(4, 3, 3, 3)],
                                {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, 11),
    "conv_uneven_pads_dilated": ("Conv", [Run(r(2, 4, 8, 8)), r(6, 2, 3, 3)],
                                 {"pads": [0, 1, 2, 1], "dilations": [2, 1], "group": 2}, 13),
    "conv_depthwise": ("Conv", [Run(r(1, 6, 8, 8)), r(6, 1, 3, 3), r(6)],
                       {"pads": [1, 1, 1, 1], "group": 6}, 9),
    "conv_transpose_output_padding": ("ConvTranspose", [Run(r(1, 2, 4, 4)), r(2, 3, 3, 3), r(3)],
                                      {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                       "output_padding": [1, 1]}, 13),
    "conv_transpose_uneven_pads": ("ConvTranspose", [Run(r(1, 2, 4, 5)), r(2, 4, 3, 3), r(8)],
                                   {"strides": [2, 1], "pads": [0, 1, 2, 0], "group": 2}, 11),
    "conv_transpose_output_shape": ("ConvTranspose", [Run(r(1, 2, 3, 3)), r(2, 2, 3, 3)],
                                    {"strides": [3, 2], "output_shape": [10, 8]}, 13),
    "max_pool_uneven_pads_ceil": ("MaxPool", [Run(r(1, 2, 7, 7))],
                                  {"kernel_shape": [3, 3], "strides": [2, 2],
                                   "pads": [0, 0, 1, 1], "ceil_mode": 1}, 12),
    # SAME_UPPER at stride 1 (PP-OCRv6): max_pool2d's 'same', no padded copy
    "max_pool_same_upper_2x2": ("MaxPool", [Run(r(1, 3, 9, 26))],
                                {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"}, 11),
    "max_pool_same_upper_3x4": ("MaxPool", [Run(r(1, 2, 7, 30))],
                                {"kernel_shape": [3, 4], "auto_pad": "SAME_UPPER"}, 11),
    "max_pool_1d_same_upper": ("MaxPool", [Run(r(2, 3, 21))],
                               {"kernel_shape": [2], "auto_pad": "SAME_UPPER"}, 11),
    "avg_pool_ceil_window_in_tail_pad": ("AveragePool", [Run(r(1, 2, 11, 12))],
                                         {"kernel_shape": [2, 2], "strides": [2, 2],
                                          "pads": [0, 0, 0, 1], "ceil_mode": 1}, 19),
    "max_pool_tail_pads_as_ceil_mode": ("MaxPool", [Run(r(1, 2, 8, 8))],
                                        {"kernel_shape": [3, 3], "strides": [2, 2],
                                         "pads": [0, 0, 1, 1]}, 12),
    "max_pool_1d_tail_pad_as_ceil_mode": ("MaxPool", [Run(r(2, 3, 10))],
                                          {"kernel_shape": [3], "strides": [2],
                                           "pads": [0, 1]}, 12),
    "max_pool_tail_pads_past_ceil_mode": ("MaxPool", [Run(r(1, 2, 8, 8))],
                                          {"kernel_shape": [3, 3], "pads": [0, 0, 2, 2]}, 12),
    "max_pool_dilated": ("MaxPool", [Run(r(1, 2, 9, 9))],
                         {"kernel_shape": [2, 2], "dilations": [2, 2]}, 12),
    "max_pool_1d": ("MaxPool", [Run(r(2, 3, 10))], {"kernel_shape": [3], "strides": [2]}, 9),
    "avg_pool_excluding_pads": ("AveragePool", [Run(r(1, 2, 6, 6))],
                                {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, 11),
    "avg_pool_including_pads": ("AveragePool", [Run(r(1, 2, 6, 6))],
                                {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                 "count_include_pad": 1}, 11),
    "avg_pool_uneven_pads": ("AveragePool", [Run(r(1, 2, 6, 7))],
                             {"kernel_shape": [2, 3], "strides": [2, 2],
                              "pads": [0, 1, 1, 0]}, 19),
    "global_max_pool": ("GlobalMaxPool", [Run(r(2, 3, 4, 5))], {}, 13),
    "global_average_pool": ("GlobalAveragePool", [Run(r(2, 3, 4, 5))], {}, 13),
    "lrn": ("LRN", [Run(r(2, 6, 4, 4))], {"size": 5, "alpha": 0.01, "beta": 0.5,
                                           "bias": 2.0}, 13),
    "batch_normalization": ("BatchNormalization",
                            [Run(r(2, 3, 4, 4)), r(3), r(3), r(3), np.abs(r(3)) + 0.5],
                            {"epsilon": 1e-3}, 15),
    "instance_normalization": ("InstanceNormalization", [Run(r(2, 3, 4, 4)), r(3), r(3)],
                               {}, 13),
    "layer_normalization_axis": ("LayerNormalization", [Run(r(2, 3, 4)), r(3, 4), r(4)],
                                 {"axis": -2}, 17),
    "leaky_relu": ("LeakyRelu", [Run(r(3, 4))], {"alpha": 0.2}, 9),
    "gelu_tanh": ("Gelu", [Run(r(3, 4))], {"approximate": "tanh"}, 20),
    "hard_sigmoid": ("HardSigmoid", [Run(r(3, 4) * 4)], {"alpha": 0.3}, 13),
    "hard_swish": ("HardSwish", [Run(r(3, 4) * 4)], {}, 14),
    "prelu": ("PRelu", [Run(r(2, 3, 4)), r(3, 1)], {}, 13),
    "clip_attrs": ("Clip", [Run(r(3, 4))], {"min": -0.5, "max": 0.5}, 9),
    "clip_max_only": ("Clip", [Run(r(3, 4)), None, f32(0.3)], {}, 13),
    "erf_sqrt_chain": ("Erf", [Run(r(3, 4))], {}, 13),
    "reciprocal": ("Reciprocal", [Run(np.abs(r(5)) + 1)], {}, 13),
    "softmax_coerced_2d": ("Softmax", [Run(r(2, 3, 4))], {"axis": 1}, 11),
    "log_softmax_axis1": ("LogSoftmax", [Run(r(2, 3, 4))], {"axis": 1}, 13),
    "pow_tensor_exponent": ("Pow", [Run(np.abs(r(2, 3)) + 0.1), r(3)], {}, 13),
    "div_broadcast": ("Div", [Run(r(2, 3, 4)), np.abs(r(3, 1)) + 1], {}, 14),
    "sub_scalar_first": ("Sub", [f32(1.0), Run(r(2, 3))], {}, 14),
    "sum_three": ("Sum", [Run(r(2, 3)), Run(r(3)), r(2, 1)], {}, 13),
    "max_variadic": ("Max", [Run(r(2, 3)), r(3)], {}, 13),
    "mean_variadic": ("Mean", [Run(r(2, 3)), Run(r(2, 3))], {}, 13),
    "reduce_sum_axes_input": ("ReduceSum", [Run(r(2, 3, 4)), i64(0, 2)], {"keepdims": 0}, 13),
    "reduce_mean_axes_attr": ("ReduceMean", [Run(r(2, 3, 4))], {"axes": [-1]}, 13),
    "reduce_mean_axes_input": ("ReduceMean", [Run(r(2, 3, 4)), i64(1)], {}, 18),
    "reduce_l2_axes_attr": ("ReduceL2", [Run(r(2, 3, 4))], {"axes": [-1], "keepdims": 0}, 13),
    "reduce_l2_axes_input": ("ReduceL2", [Run(r(2, 3, 4)), i64(0, 2)], {}, 18),
    "reduce_l2_all": ("ReduceL2", [Run(r(2, 3, 4))], {"keepdims": 0}, 18),
    "reduce_max_all": ("ReduceMax", [Run(r(2, 3, 4))], {"keepdims": 0}, 13),
    "where_equal": ("Where", [Run(np.array([[True, False, True]])), Run(r(2, 3)), f32(-1.0)],
                    {}, 16),
    "and_runtime": ("And", [Run(bools(2, 3)), Run(bools(3))], {}, 13),
    "and_known_operand": ("And", [bools(2, 1), Run(bools(2, 3))], {}, 13),
    "equal_int": ("Equal", [Run(i64(1, 2, 3)), i64(2)], {}, 13),
    "gemm_trans_alpha_beta": ("Gemm", [Run(r(4, 3)), r(5, 4), r(5)],
                              {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, 13),
    "gemm_runtime_b": ("Gemm", [Run(r(2, 3)), Run(r(3, 4)), r(1, 4)], {"beta": 0.5}, 11),
    "gemm_matrix_c": ("Gemm", [Run(r(2, 3)), r(3, 4), r(2, 4)], {}, 13),
    "matmul_batched": ("MatMul", [Run(r(2, 3, 4)), Run(r(2, 4, 5))], {}, 13),
    "matmul_known_3d": ("MatMul", [Run(r(3, 4)), r(2, 4, 5)], {}, 13),
    "slice_negative_steps": ("Slice", [Run(r(5, 6)), i64(-1, 4), i64(-100, 0), i64(0, 1),
                                       i64(-2, -1)], {}, 13),
    "slice_attrs": ("Slice", [Run(r(5, 6))], {"starts": [1], "ends": [1000], "axes": [1]}, 9),
    "split_input": ("Split", [Run(r(2, 7)), i64(3, 4)], {"axis": 1}, 13, 2),
    "split_num_outputs": ("Split", [Run(r(7, 2))], {"num_outputs": 3}, 18, 3),
    "split_attr": ("Split", [Run(r(6, 2))], {"split": [2, 4]}, 11, 2),
    "gather_known_indices": ("Gather", [Run(r(3, 5, 2)), i64(4, 0, 4)], {"axis": 1}, 13),
    "gather_scalar_index": ("Gather", [Run(r(3, 5)), np.array(-1, np.int64)], {"axis": 1}, 13),
    "gather_known_table": ("Gather", [r(4, 6, 3), Run(np.array([[1, 0], [2, 1]]))],
                           {"axis": 1}, 13),
    "gather_elements_runtime_data": ("GatherElements", [Run(r(3, 4)), np.array(
        [[0, -1], [3, 2], [1, 1]], np.int64)], {"axis": 1}, 13),
    "gather_elements_axis0_smaller": ("GatherElements", [Run(r(3, 4, 2)), np.array(
        [[[2], [0], [1], [-3]], [[1], [1], [0], [2]]], np.int64)], {}, 11),
    "gather_elements_runtime_indices": ("GatherElements", [Run(r(3, 4, 2)), Run(np.array(
        [[[2], [0], [1], [-3]], [[1], [-1], [0], [2]]], np.int64))], {}, 11),
    "gather_elements_runtime_indices_known_data": ("GatherElements", [r(2, 5), Run(np.array(
        [[4, 0, -1], [1, 1, 3]], np.int64))], {"axis": 1}, 13),
    "squeeze_attr": ("Squeeze", [Run(r(2, 1, 3, 1))], {"axes": [1]}, 11),
    "squeeze_all": ("Squeeze", [Run(r(2, 1, 3, 1))], {}, 13),
    "unsqueeze_input": ("Unsqueeze", [Run(r(2, 3)), i64(0, -1)], {}, 13),
    "flatten_axis2": ("Flatten", [Run(r(2, 3, 4, 5))], {"axis": 2}, 13),
    "transpose_default": ("Transpose", [Run(r(2, 3, 4))], {}, 13),
    "concat_with_known": ("Concat", [Run(r(2, 3)), r(2, 1)], {"axis": -1}, 13),
    "expand": ("Expand", [Run(r(3, 1)), i64(2, 3, 4)], {}, 13),
    "tile": ("Tile", [Run(r(2, 3)), i64(2, 1)], {}, 13),
    "pad_reflect": ("Pad", [Run(r(1, 2, 4, 4)), i64(0, 0, 1, 2, 0, 0, 2, 1)],
                    {"mode": "reflect"}, 13),
    "pad_edge_axes": ("Pad", [Run(r(2, 4, 4)), i64(1, 2, 0, 1), None, i64(0, 2)],
                      {"mode": "edge"}, 18),
    "pad_constant_attrs": ("Pad", [Run(r(2, 3))], {"pads": [0, 1, 0, 2], "value": 1.5}, 9),
    "cast_to_int": ("Cast", [Run(r(2, 3) * 4)], {"to": onnx.TensorProto.INT64}, 13),
    "dropout_identity": ("Dropout", [Run(r(2, 3))], {}, 13),
    "cast_like_to_int32": ("CastLike", [Run(r(2, 3) * 4), np.zeros(1, np.int32)], {}, 15),
    "cast_like_runtime_target": ("CastLike", [Run(i64(3, -2, 7)), Run(r(1))], {}, 19),
    "matmul_integer_one_element_zero_points": (
        "MatMulInteger", [Run(_rng.integers(0, 255, (4, 3), dtype=np.uint8)),
                          _rng.integers(-127, 127, (3, 2), dtype=np.int8),
                          np.array([3], np.uint8), np.array([0], np.int8)], {}, 10),
    "conv_integer_int32_output": (
        "ConvInteger", [Run(_rng.integers(0, 255, (1, 2, 5, 5), dtype=np.uint8)),
                        _rng.integers(-127, 127, (3, 2, 3, 3), dtype=np.int8),
                        np.array(7, np.uint8)], {"pads": [1, 1, 1, 1]}, 10),
    # uint8 weights: centered to int8 when they fit (zero point 128), else in float32
    "matmul_integer_uint8_weight_zero_point_128": (
        "MatMulInteger", [Run(_rng.integers(0, 255, (4, 6), dtype=np.uint8)),
                          _rng.integers(1, 256, (6, 5), dtype=np.uint8),
                          np.array(3, np.uint8), np.array(128, np.uint8)], {}, 10),
    "matmul_integer_uint8_weight_far_zero_point": (
        "MatMulInteger", [Run(_rng.integers(0, 255, (4, 6), dtype=np.uint8)),
                          _rng.integers(0, 256, (6, 5), dtype=np.uint8),
                          np.array(3, np.uint8), np.array(119, np.uint8)], {}, 10),
    "conv_integer_uint8_weight_far_zero_point": (
        "ConvInteger", [Run(_rng.integers(0, 255, (1, 2, 5, 5), dtype=np.uint8)),
                        _rng.integers(0, 256, (3, 2, 3, 3), dtype=np.uint8),
                        np.array(7, np.uint8), np.array(178, np.uint8)],
        {"pads": [1, 1, 1, 1]}, 10),
    "layer_norm_mean_inv_std_dev": ("LayerNormalization",
                                    [Run(r(2, 3, 4) * 3), r(3, 4), r(3, 4)],
                                    {"axis": 1, "epsilon": 1e-3}, 17, 3),
    "pow_float_base_int_exponent": ("Pow", [Run(r(2, 3)), np.array(3, np.int64)], {}, 15),
    "reduce_min": ("ReduceMin", [Run(r(3, 4, 5))], {"axes": [0, 2], "keepdims": 0}, 13),
    "reduce_l1": ("ReduceL1", [Run(r(3, 4, 5))], {"axes": [-1]}, 13),
    "reduce_log_sum": ("ReduceLogSum", [Run(np.abs(r(3, 4)) + np.float32(0.1))], {}, 13),
    "reduce_log_sum_exp": ("ReduceLogSumExp", [Run(r(3, 4, 5) * 30)], {"axes": [1]}, 13),
    "lp_norm_l1_axis0": ("LpNormalization", [Run(r(3, 4))], {"p": 1, "axis": 0}, 13),
    "lp_norm_l2_last": ("LpNormalization", [Run(r(2, 3, 4))], {}, 13),
    "hardmax_axis1_ties": ("Hardmax", [Run(np.round(r(2, 5, 3)))], {"axis": 1}, 13),
    "hardmax_opset11_flattened": ("Hardmax", [Run(r(2, 3, 4))], {"axis": 1}, 11),
    "scatter_elements_axis1_negative": ("ScatterElements", [Run(r(3, 5)), np.array(
        [[1, -1], [0, 2], [4, -5]], np.int64), Run(r(3, 2))], {"axis": 1}, 13),
    "scatter_elements_add": ("ScatterElements", [Run(r(4, 3)), np.array(
        [[1, 0, 3], [1, 2, 3]], np.int64), Run(r(2, 3))], {"reduction": "add"}, 16),
    "dropout_mask": ("Dropout", [Run(r(2, 3))], {}, 13, 2),
    "flatten_axis_minus_1": ("Flatten", [Run(r(2, 3, 4, 5))], {"axis": -1}, 13),
    "flatten_axis_minus_rank": ("Flatten", [Run(r(2, 3, 4, 5))], {"axis": -4}, 13),
    "avg_pool_dilated": ("AveragePool", [Run(r(1, 2, 8, 9))],
                         {"kernel_shape": [2, 3], "dilations": [2, 2], "strides": [1, 2]}, 19),
    "avg_pool_dilated_pads_excluded": ("AveragePool", [Run(r(1, 2, 7, 7))],
                                       {"kernel_shape": [3, 2], "dilations": [2, 3],
                                        "pads": [1, 0, 2, 1], "count_include_pad": 0}, 19),
}

# Every operand known: the importer folds the op in numpy, the graph output is a constant.
FOLDED: dict[str, tuple] = {
    "and_known": ("And", [bools(2, 3), bools(3)], {}, 13),
    "gather_elements_known": ("GatherElements", [r(3, 4), np.array(
        [[1, 0, 2, -1], [2, 2, 0, 0]], np.int64)], {"axis": 0}, 13),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_onnxruntime(case, check_against_ort):
    model, feeds = single_node(*CASES[case])
    check_against_ort(model, [feeds])


@pytest.mark.parametrize("case", sorted(FOLDED))
def test_folded_op_matches_onnxruntime(case):
    """A folded op is exact (a selection or logic in numpy), so it equals onnxruntime."""
    import modelc

    ort = pytest.importorskip("onnxruntime")
    model, _ = single_node(*FOLDED[case])
    (got,) = modelc.from_onnx(model).outputs.values()
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {})
    assert got.is_constant, "the op was not folded"
    assert got.dtype == str(want.dtype)
    np.testing.assert_array_equal(got.data, want)


def test_op_table_covers_the_issue_op_list():
    import modelc

    required = {"Conv", "ConvTranspose", "BatchNormalization", "Relu", "LeakyRelu", "Clip",
                "Sigmoid", "Tanh", "Erf", "Gelu", "Softmax", "LogSoftmax",
                "LayerNormalization", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Sum",
                "MatMul", "Gemm", "Reshape", "Transpose", "Flatten", "Concat", "Split",
                "Slice", "Gather", "Squeeze", "Unsqueeze", "Shape", "Constant",
                "ConstantOfShape", "Cast", "Where", "Expand", "Equal", "ReduceMean",
                "ReduceSum", "ReduceMax", "MaxPool", "AveragePool", "GlobalAveragePool", "Pad",
                "LRN", "Dropout", "Identity"}
    assert required <= set(modelc.onnx.OPS)


def _onnx_unary() -> dict[str, Any]:
    """The ONNX schema of each unary kernel op of the ABI that ONNX has, by matching name
    (``hardswish`` is ``HardSwish``); relu6 and silu have none and arrive as ``Clip(0, 6)``
    and ``x * Sigmoid(x)``, whose expansions are recognised."""
    from wasm_kernels import abi

    schemas = {s.name.lower(): s for s in onnx.defs.get_all_schemas() if s.domain == ""}
    return {op: schemas[op] for op in abi.UNARY_OPS if op in schemas}


@pytest.mark.parametrize("op", sorted(_onnx_unary()))
def test_every_abi_unary_op_imports_as_itself(op, check_against_ort):
    from modelc.onnx.op_table import OPS, OPSETS

    name = _onnx_unary()[op].name
    assert name in OPS, f"the ONNX importer does not map {name}"
    opset = onnx.defs.get_schema(name, OPSETS[1]).since_version  # the newest we import
    x = r(3, 4) * 3
    if op in ("log", "sqrt"):
        x = np.abs(x) + np.float32(0.1)
    model, _ = single_node(name, [Run(x)], {}, max(14, opset))
    graph = check_against_ort(model, [{"in0": x}])
    assert [n.op for n in graph.nodes] == [op]


def test_no_op_type_is_mapped_by_two_op_modules():
    """The importer merges the op modules' tables, where a later one would silently win."""
    from modelc.onnx import op_table

    tables = {name: getattr(op_table, name).OPS for name in dir(op_table)
              if name.startswith("ops_")}
    seen: dict[str, str] = {}
    for name, table in sorted(tables.items()):
        for op_type in table:
            assert op_type not in seen, f"{op_type} is in both {seen[op_type]} and {name}"
            seen[op_type] = name
    assert set(seen) == set(op_table.OPS)


def test_a_dim_stored_as_minus_one_is_symbolic() -> None:
    """Old paddle2onnx exports write a dynamic dim as ``dim_value: -1``; onnxruntime takes it
    as symbolic, and so does the importer (and ``input_shapes`` may fix it)."""
    import modelc

    model, _ = single_node("Relu", [Run(r(2, 3))], {}, 13)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    assert modelc.from_onnx(model).inputs["in0"].shape == ("in0_0", 3)
    assert modelc.from_onnx(model, input_shapes={"in0": (5, 3)}).inputs["in0"].shape == (5, 3)


TAIL_PADDED_POOLS = ("max_pool_tail_pads_as_ceil_mode", "max_pool_1d_tail_pad_as_ceil_mode",
                     "max_pool_tail_pads_past_ceil_mode")


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("case", TAIL_PADDED_POOLS)
def test_tail_padded_max_pool_runs_in_wasm_as_onnxruntime(case: str, kernels: str) -> None:
    """Padding only after the input pools in ceil mode where that makes the same windows
    (no padded copy), and through a padded copy where it does not."""
    import modelc

    model, _ = single_node(*CASES[case])
    assert ("pad" in modelc.from_onnx(model).ops()) == case.endswith("past_ceil_mode")
    for got, want in wasm_and_onnxruntime(CASES[case], kernels):
        np.testing.assert_allclose(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("case", ["matmul_integer_one_element_zero_points",
                                  "conv_integer_int32_output",
                                  "matmul_integer_uint8_weight_zero_point_128",
                                  "matmul_integer_uint8_weight_far_zero_point",
                                  "conv_integer_uint8_weight_far_zero_point"])
def test_integer_accumulator_output_is_int32_in_wasm(case):
    """MatMulInteger / ConvInteger as a graph output: int32, exactly onnxruntime's."""
    import modelc
    import runtime

    ort = pytest.importorskip("onnxruntime")
    model, feeds = single_node(*CASES[case])
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)
    with runtime.load(modelc.export(modelc.from_onnx(model))) as session:
        (got,) = session.run(feeds).values()
    assert got.dtype == want.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceProd", "ReduceMax", "ReduceMean",
                                "ReduceSumSquare"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduction_over_an_empty_axis_is_its_identity(op, keepdims):
    """Against onnx's reference evaluator (ReduceMax of nothing is -inf, ReduceMean NaN)."""
    import modelc
    from onnx.reference import ReferenceEvaluator

    model, feeds = single_node(op, [Run(r(2, 0, 4)), i64(1)], {"keepdims": keepdims}, 18)
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    (got,) = modelc.interpret(modelc.from_onnx(model), feeds).values()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
