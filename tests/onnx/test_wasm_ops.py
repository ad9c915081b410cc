"""Issue #19's ops (Einsum's common forms, OneHot, GatherND, ScatterND, TopK, 3-D
convolutions and pools) and layouts (a 5-D transpose whose unit axes leave 4 to merge),
one-node models run in wasm on every kernel provider against onnxruntime."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from executors import PROVIDERS

sys.path.insert(0, str(Path(__file__).parent))
from single_node import Run, f32, i64, r, single_node, wasm_and_onnxruntime

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper

_rng = np.random.default_rng(19)

WASM_CASES: dict[str, tuple] = {
    "transpose_5d_unit_axes": ("Transpose", [Run(r(1, 40, 3, 8, 5))],
                               {"perm": [2, 0, 3, 1, 4]}, 13),
    "einsum_batched_matmul": ("Einsum", [Run(r(2, 3, 4)), Run(r(2, 4, 5))],
                              {"equation": "bij,bjk->bik"}, 12),
    "einsum_attention_scores": ("Einsum", [Run(r(1, 2, 3, 4)), Run(r(1, 2, 5, 4))],
                                {"equation": "bhqd,bhkd->bhqk"}, 12),
    "einsum_ellipsis_weight": ("Einsum", [Run(r(2, 3, 4)), r(4, 6)],
                               {"equation": "...ij,jk->...ik"}, 12),
    "einsum_transpose": ("Einsum", [Run(r(3, 4))], {"equation": "ij->ji"}, 12),
    "einsum_sum_implicit": ("Einsum", [Run(r(2, 3, 4))], {"equation": "bij"}, 12),
    "einsum_outer_and_sum": ("Einsum", [Run(r(3, 4)), Run(r(5))], {"equation": "ij,k->jk"}, 12),
    "einsum_three_operands": ("Einsum", [Run(r(2, 3)), Run(r(3, 4)), r(4, 2)],
                              {"equation": "ij,jk,kl->il"}, 12),
    "einsum_diagonal": ("Einsum", [Run(r(4, 4))], {"equation": "ii->i"}, 12),
    "einsum_trace": ("Einsum", [Run(r(3, 3))], {"equation": "ii"}, 12),
    "einsum_batch_diagonal": ("Einsum", [Run(r(2, 3, 3))], {"equation": "...ii->...i"}, 12),
    "einsum_diagonal_times_known": ("Einsum", [Run(r(2, 3, 3)), r(3, 5)],
                                    {"equation": "bii,ij->bj"}, 12),
    "one_hot_int32_last_axis": ("OneHot", [Run(np.array([[0, 3], [-1, 7]], np.int32)),
                                           np.array([5.0], np.float32),
                                           np.array([-1.0, 2.5], np.float32)], {}, 11),
    "one_hot_int64_axis0_int_values": ("OneHot", [Run(np.array([2, -5, 1], np.int64)),
                                                  i64(4), np.array([0, 7], np.int64)],
                                       {"axis": 0}, 11),
    "gather_elements_runtime_indices": ("GatherElements", [Run(r(3, 4, 2)), Run(np.array(
        [[[2], [0], [1], [-3]], [[1], [-1], [0], [2]]], np.int64))], {}, 11),
    "gather_nd_known_indices": ("GatherND", [Run(r(3, 4, 2)),
                                             np.array([[[0, 1]], [[2, -1]]], np.int64)], {}, 13),
    "scatter_nd_rows_repeated_index": ("ScatterND", [Run(r(4, 3)), np.array(
        [[1], [3], [1]], np.int64), Run(r(3, 3))], {}, 13),
    "scatter_nd_elements_known_updates": ("ScatterND", [Run(r(2, 3, 2)), np.array(
        [[0, 2, 1], [1, 0, 0]], np.int64), np.array([5.0, -5.0], np.float32)], {}, 13),
    **{f"scatter_nd_{reduction}_run_time_indices": ("ScatterND", [
        Run(r(4, 3)), Run(np.array([[1], [3], [1], [-1]], np.int64)), Run(r(4, 3))],
        {"reduction": reduction}, 16) for reduction in ("mul", "max", "min")},
    "scatter_elements_max_known_indices": ("ScatterElements", [Run(r(3, 4)), np.array(
        [[1, 1], [0, 3], [2, 2]], np.int64), Run(r(3, 2))], {"axis": 1, "reduction": "max"},
        18),
    "reverse_sequence_time_major": ("ReverseSequence", [Run(r(5, 3, 2)), i64(5, 1, 3)], {}, 10),
    "reverse_sequence_batch_major": ("ReverseSequence", [Run(r(3, 4)), i64(2, 4, 0)],
                                     {"time_axis": 1, "batch_axis": 0}, 10),
    "col2im_strided_padded": ("Col2Im", [Run(r(2, 3 * 6, 24)), i64(6, 7), i64(2, 3)],
                              {"strides": [2, 1], "pads": [1, 0, 1, 1]}, 18),
    "col2im_dilated": ("Col2Im", [Run(r(1, 2 * 4, 9)), i64(5, 5), i64(2, 2)],
                       {"dilations": [2, 2]}, 18),
    "top_k_largest_last_axis": ("TopK", [Run(r(2, 3, 9)), i64(4)], {}, 11, 2),
    "top_k_smallest_middle_axis": ("TopK", [Run(_rng.choice(np.array(
        [-1.0, 0.0, 2.5, np.inf], np.float32), (2, 6, 3))), i64(6)],
                                   {"axis": 1, "largest": 0}, 11, 2),
    "top_k_attr_opset9": ("TopK", [Run(r(5, 4))], {"k": 2, "axis": 0}, 9, 2),
    # Met in real models: a log-mel front end's floor at max - 80 dB, tf2onnx's layer norm
    # through BatchNormalization with statistics computed at run time, around the channels.
    "clip_run_time_min": ("Clip", [Run(r(3, 4)), Run(f32(-0.2))], {}, 13),
    "batch_normalization_run_time_statistics": ("BatchNormalization", [
        Run(r(1, 3, 4, 4)), r(3), r(3), Run(r(3)), Run(np.abs(r(3)) + 0.5)],
        {"epsilon": 1e-3}, 15),
    "reduce_mean_around_the_channels": ("ReduceMean", [Run(r(1, 3, 4, 5))],
                                        {"axes": [0, 2, 3]}, 13),
    "reduce_sum_square_around_the_channels": ("ReduceSumSquare", [Run(r(1, 3, 4, 5))],
                                              {"axes": [0, 2, 3], "keepdims": 0}, 13),
    # reductions over axes that are not adjacent: the reduced axes are moved last first
    "reduce_mean_non_adjacent_keepdims": ("ReduceMean", [Run(r(2, 3, 4, 5))],
                                          {"axes": [0, 2]}, 13),
    "reduce_sum_non_adjacent": ("ReduceSum", [Run(r(2, 3, 4, 5)), i64(1, -1)],
                                {"keepdims": 0}, 13),
    "max_pool_uint8": ("MaxPool", [Run(_rng.integers(0, 256, (1, 2, 6, 7), dtype=np.uint8))],
                       {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 1]}, 12),
    "max_pool_int8_1d": ("MaxPool", [Run(_rng.integers(-128, 128, (2, 3, 9), dtype=np.int8))],
                         {"kernel_shape": [2], "pads": [0, 1]}, 12),
    # MaxPool's Indices: flat positions of the first max of each window (ties included)
    "max_pool_indices_pads_ceil": ("MaxPool", [Run(np.round(r(2, 3, 7, 6)))],
                                   {"kernel_shape": [3, 2], "strides": [2, 2],
                                    "pads": [1, 0, 1, 1], "ceil_mode": 1}, 12, 2),
    "max_pool_indices_dilated_column_major": ("MaxPool", [Run(r(1, 2, 8, 9))],
                                              {"kernel_shape": [2, 3], "dilations": [2, 1],
                                               "storage_order": 1}, 12, 2),
    "max_pool_indices_1d": ("MaxPool", [Run(r(2, 3, 10))],
                            {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, 12, 2),
    "eye_like_off_diagonal": ("EyeLike", [Run(r(3, 5))], {"k": 2}, 9),
    "eye_like_int32_from_float": ("EyeLike", [Run(r(4, 3))], {"k": -1, "dtype": 6}, 9),
    # a per-tensor scale of a 1-D tensor: ``axis`` (default 1) is ignored, as ONNX says
    "quantize_linear_1d_per_tensor": ("QuantizeLinear", [Run(r(7) * 10), f32(0.1),
                                                         np.array(3, np.uint8)], {}, 13),
    "dequantize_linear_1d_per_tensor": ("DequantizeLinear", [Run(_rng.integers(
        -128, 128, 6, dtype=np.int8)), f32(0.05), np.array(-2, np.int8)], {}, 13),
    # MatMul with 1-D operands (numpy's rules) and batch axes of size 1 to broadcast
    "matmul_vector_left": ("MatMul", [Run(r(4)), Run(r(2, 4, 3))], {}, 13),
    "matmul_vector_right": ("MatMul", [Run(r(2, 1, 3, 4)), Run(r(4))], {}, 13),
    "matmul_vectors": ("MatMul", [Run(r(5)), Run(r(5))], {}, 13),
    "matmul_known_vector": ("MatMul", [Run(r(3, 6)), r(6)], {}, 13),
    "matmul_broadcast_batch": ("MatMul", [Run(r(3, 1, 2, 4)), Run(r(1, 2, 4, 5))], {}, 13),
    "matmul_broadcast_known": ("MatMul", [Run(r(2, 1, 3, 4)), r(3, 4, 2)], {}, 13),
    # Pow by a tensor exponent: negative bases with whole exponents (odd and even), NaN
    # with fractional ones, zero bases and exponents, broadcasting, an int64 exponent
    "pow_run_time_exponent": ("Pow", [Run(np.array([[-2.0, -1.5, 0.0, 3.0, -3.0, 0.0]],
                                                   np.float32).repeat(3, 0)),
                                      Run(np.array([[3.0, 2.0, 0.0, -1.5, -0.5, 2.0],
                                                    [-2.0, -3.0, -1.0, 0.25, 4.0, 0.0],
                                                    [1.0, 0.5, 1.0, 2.0, -1.0, 0.5]],
                                                   np.float32))], {}, 15),
    "pow_known_exponent_row": ("Pow", [Run(r(3, 4) * 2), np.array([1.0, 2.0, 3.0, -2.0],
                                                                  np.float32)], {}, 13),
    "pow_int64_exponent": ("Pow", [Run(np.abs(r(2, 5)) + 0.5),
                                   Run(np.array([0, 1, -2, 3, 7], np.int64))], {}, 15),
    # 3-D convolutions and pools (video and volumetric models), LpPool
    "conv_3d_grouped_uneven_pads": ("Conv", [Run(r(1, 4, 5, 6, 7)), r(6, 2, 3, 2, 3), r(6)],
                                    {"pads": [1, 0, 1, 0, 1, 2], "strides": [2, 1, 2],
                                     "dilations": [1, 2, 1], "group": 2}, 11),
    "conv_3d_same_upper": ("Conv", [Run(r(2, 3, 4, 5, 5)), r(4, 3, 3, 3, 3)],
                           {"auto_pad": "SAME_UPPER"}, 11),
    "conv_transpose_3d_grouped": ("ConvTranspose", [Run(r(1, 4, 3, 4, 3)), r(4, 3, 2, 3, 2),
                                                    r(6)],
                                  {"strides": [2, 1, 2], "pads": [0, 1, 0, 1, 1, 0],
                                   "group": 2}, 11),
    "conv_transpose_3d_output_padding": ("ConvTranspose", [Run(r(2, 2, 2, 3, 3)),
                                                           r(2, 3, 3, 3, 3)],
                                         {"strides": [2, 2, 2], "pads": [1, 1, 1, 1, 1, 1],
                                          "output_padding": [1, 0, 1]}, 11),
    "max_pool_3d_ceil": ("MaxPool", [Run(r(1, 3, 6, 7, 5))],
                         {"kernel_shape": [3, 2, 3], "strides": [2, 2, 1],
                          "pads": [1, 0, 1, 1, 1, 1], "ceil_mode": 1}, 12),
    "average_pool_3d_excluding_pads": ("AveragePool", [Run(r(2, 2, 5, 6, 4))],
                                       {"kernel_shape": [3, 3, 2], "pads": [1, 1, 0, 1, 1, 1]},
                                       19),
    "average_pool_3d_dilated": ("AveragePool", [Run(r(1, 2, 7, 6, 6))],
                                {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2]}, 19),
    **{f"average_pool_dilated_ceil_include_pad_{include}": ("AveragePool", [
        Run(r(1, 2, 9, 8))], {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [2, 2],
                             "pads": [1, 0, 1, 1], "ceil_mode": 1,
                             "count_include_pad": include}, 19) for include in (0, 1)},
    "lp_pool_p2_pads": ("LpPool", [Run(r(1, 3, 7, 6))],
                        {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 1]}, 18),
    "lp_pool_p3_3d": ("LpPool", [Run(r(1, 2, 4, 5, 6))], {"kernel_shape": [2, 2, 3], "p": 3}, 18),
    "lp_pool_p1_dilated_1d": ("LpPool", [Run(r(2, 3, 9))],
                              {"kernel_shape": [3], "p": 1, "dilations": [2]}, 18),
    "reduce_prod_run_time": ("ReduceProd", [Run(r(2, 3, 4))], {"axes": [1], "keepdims": 0},
                             13),
}


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("case", sorted(WASM_CASES))
def test_issue19_op_runs_in_wasm_as_onnxruntime(case: str, kernels: str) -> None:
    for got, want in wasm_and_onnxruntime(WASM_CASES[case], kernels):
        assert got.dtype == want.dtype
        finite = np.isfinite(want)
        scale = max(float(np.abs(want[finite]).max(initial=0.0)), 1e-6)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * scale)


def test_top_k_beyond_the_axis_is_refused() -> None:
    import modelc

    graph = helper.make_graph(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="the_topk")], "case",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in "vi"],
        [numpy_helper.from_array(i64(10), "k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    with pytest.raises(modelc.CompileError, match=r"topk: k=10 must be in \[0, 3\], the fixed "
                                                  r"size of dim 1"):
        modelc.from_onnx(model)
