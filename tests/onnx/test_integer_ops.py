"""The integer paths of ArgMax, ArgMin, CumSum, TopK, the comparisons and Where, audited
against onnxruntime from one table (issue #19): on int32 and int64, and on the narrower
integer types wherever onnxruntime takes them, every op runs in wasm on every kernel
provider and equals onnxruntime exactly; uint32, which onnxruntime also takes for some, is
refused at compile time with an error naming the dtype."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from executors import PROVIDERS

sys.path.insert(0, str(Path(__file__).parent))
from single_node import Run, bools, f32, i64, r, single_node, ties, wasm_and_onnxruntime

import modelc

onnx = pytest.importorskip("onnx")
from onnx import helper

_rng = np.random.default_rng(19)


def ints(dtype: type, *shape: int) -> np.ndarray:
    """Integers from a few values (so ties occur), the dtype's extremes among them."""
    info = np.iinfo(dtype)
    return _rng.choice(np.array([info.min, info.min + 1, 0, 2, 5, info.max], dtype), shape)


def _compare(op: str, opset: int = 13):
    return lambda dtype: (op, [Run(ints(dtype, 2, 3)), Run(ints(dtype, 3))], {}, opset)


# id: dtype -> (op, operands, attrs, opset[, outputs])
OPS = {
    "argmax": lambda dtype: ("ArgMax", [Run(ints(dtype, 3, 6))], {"axis": 1}, 13),
    "argmax_last_index": lambda dtype: ("ArgMax", [Run(ints(dtype, 3, 6))],
                                        {"axis": 1, "select_last_index": 1}, 13),
    "argmin_axis0_dropped": lambda dtype: ("ArgMin", [Run(ints(dtype, 5, 2, 3))],
                                           {"axis": 0, "keepdims": 0}, 13),
    "argmin_last_index": lambda dtype: ("ArgMin", [Run(ints(dtype, 4, 5))],
                                        {"axis": -1, "select_last_index": 1}, 13),
    "cumsum_wraps": lambda dtype: ("CumSum", [Run(ints(dtype, 3, 7)), np.array(1, np.int64)],
                                   {}, 14),
    "cumsum_reverse_exclusive": lambda dtype: ("CumSum", [Run(ints(dtype, 9, 2)),
                                                          np.array(0, np.int32)],
                                               {"reverse": 1, "exclusive": 1}, 14),
    "topk_largest": lambda dtype: ("TopK", [Run(ints(dtype, 2, 9)), np.array([4], np.int64)],
                                   {}, 11, 2),
    "topk_smallest_axis0": lambda dtype: ("TopK", [Run(ints(dtype, 7, 3)),
                                                   np.array([7], np.int64)],
                                          {"axis": 0, "largest": 0}, 11, 2),
    "equal": _compare("Equal"),
    "less": _compare("Less"),
    "greater": _compare("Greater"),
    "less_or_equal": _compare("LessOrEqual", 16),
    "greater_or_equal": _compare("GreaterOrEqual", 16),
    "where": lambda dtype: ("Where", [Run(_rng.random((2, 3)) < 0.5), Run(ints(dtype, 2, 3)),
                                      Run(ints(dtype, 3))], {}, 16),
}
RUN = ("int32", "int64")
"""The integer dtypes every op of ``OPS`` runs on."""
_BUT_CUMSUM = [op for op in sorted(OPS) if not op.startswith("cumsum")]
_COMPARISONS = ["equal", "less", "greater", "less_or_equal", "greater_or_equal"]
NARROW = {
    "int8": _BUT_CUMSUM, "uint8": _BUT_CUMSUM,
    "int16": _COMPARISONS + ["topk_largest", "topk_smallest_axis0"],
}
"""The narrower dtypes and the ops onnxruntime runs on them (its CPU kernels' type lists)."""
REFUSED = {"uint32": _COMPARISONS + ["where"]}
"""Dtypes onnxruntime runs these ops on that do not lower to wasm."""


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("dtype, op", [(d, op) for d in RUN for op in sorted(OPS)]
                         + [(d, op) for d, ops in NARROW.items() for op in ops])
def test_integer_op_equals_onnxruntime(op: str, dtype: str, kernels: str) -> None:
    for got, want in wasm_and_onnxruntime(OPS[op](np.dtype(dtype).type), kernels):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype, op", [(d, op) for d, ops in REFUSED.items() for op in ops])
def test_unlowered_integer_op_is_refused_naming_the_dtype(op: str, dtype: str) -> None:
    ort = pytest.importorskip("onnxruntime")
    model, feeds = single_node(*OPS[op](np.dtype(dtype).type))
    ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, feeds)  # the table lists only what onnxruntime runs
    with pytest.raises(modelc.CompileError, match=rf"\b{dtype}\b"):
        modelc.export(modelc.from_onnx(model))


# Run-time comparisons, And and the int64 -> bool cast: the ops of attention masks.
MASK_CASES: dict[str, tuple] = {
    **{op.lower(): (op, [Run(ties(2, 3)), Run(ties(3))], {}, 13)
       for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")},
    "equal_known_scalar": ("Equal", [Run(ties(4, 1, 5)), f32(2.5)], {}, 13),
    "greater_known_row": ("Greater", [ties(5), Run(ties(2, 3, 5))], {}, 13),
    "and_broadcast": ("And", [Run(bools(3, 1)), Run(bools(1, 4))], {}, 13),
    "not_runtime": ("Not", [Run(bools(2, 5))], {}, 13),
    "is_nan": ("IsNaN", [Run(ties(2, 5))], {}, 13),
    "is_inf": ("IsInf", [Run(ties(2, 5))], {}, 10),
    "is_inf_negative_only": ("IsInf", [Run(-ties(3, 4))], {"detect_positive": 0}, 10),
    "is_inf_positive_only": ("IsInf", [Run(-ties(3, 4))], {"detect_negative": 0}, 10),
    "reduce_max_bool_any": ("ReduceMax", [Run(bools(3, 4, 5)), i64(0, 2)], {}, 20),
    "reduce_min_bool_all": ("ReduceMin", [Run(bools(3, 4)), i64(1)], {"keepdims": 0}, 20),
    "cast_int64_to_bool": ("Cast", [Run(i64(0, 3, -1, 0, 2 ** 40))],
                           {"to": onnx.TensorProto.BOOL}, 13),
}


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("case", sorted(MASK_CASES))
def test_mask_op_runs_in_wasm_as_onnxruntime(case: str, kernels: str) -> None:
    import runtime

    ort = pytest.importorskip("onnxruntime")
    model, feeds = single_node(*MASK_CASES[case])
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)
    with runtime.load(modelc.export(modelc.from_onnx(model)), kernels=kernels) as session:
        (got,) = session.run(feeds).values()
    assert got.dtype == want.dtype == np.bool_
    np.testing.assert_array_equal(got, want)


# Run-time integer tensors (issue #19): comparisons, casts, where and gather on int32/int64.
INTEGER_CASES: dict[str, tuple] = {
    "equal_int32": ("Equal", [Run(ints(np.int32, 2, 3)), Run(ints(np.int32, 3))], {}, 13),
    "less_int64": ("Less", [Run(ints(np.int64, 2, 1, 4)), Run(ints(np.int64, 3, 1))], {}, 13),
    "greater_int32_known_scalar": ("Greater", [Run(ints(np.int32, 5)),
                                               np.array(2, np.int32)], {}, 13),
    "greater_or_equal_int64_known_row": ("GreaterOrEqual", [
        np.array([0, 2 ** 40, -1], np.int64), Run(ints(np.int64, 4, 3))], {}, 16),
    "less_or_equal_int32": ("LessOrEqual", [Run(ints(np.int32, 3, 4)),
                                            Run(ints(np.int32, 3, 4))], {}, 16),
    **{f"cast_{a}_to_{b}": ("Cast", [Run(x)], {"to": helper.np_dtype_to_tensor_dtype(
        np.dtype(b))}, 13) for a, b, x in [
        ("int32", "float32", ints(np.int32, 2, 3)),
        ("float32", "int32", r(2, 3) * 100),
        ("int32", "int64", ints(np.int32, 7)),
        ("int64", "int32", np.array([1, -1, 2 ** 31 + 5, -(2 ** 35)], np.int64)),
        ("bool", "int64", bools(2, 3)),
        ("bool", "int32", bools(4)),
        ("int32", "bool", ints(np.int32, 6)),
        ("float32", "bool", np.array([0.0, -0.0, 1.5, np.nan], np.float32))]},
    "where_int32": ("Where", [Run(bools(2, 3)), Run(ints(np.int32, 2, 3)),
                              np.array(-7, np.int32)], {}, 16),
    "where_int64_broadcast": ("Where", [Run(bools(3, 1)), Run(ints(np.int64, 1, 4)),
                                        Run(ints(np.int64, 3, 4))], {}, 16),
    "gather_int32_indices": ("Gather", [r(6, 3), Run(np.array([[5, 0], [2, 2]], np.int32))],
                             {"axis": 0}, 13),
    "slice_int64": ("Slice", [Run(ints(np.int64, 4, 5)), i64(1), i64(4), i64(1)], {}, 13),
    "concat_int32": ("Concat", [Run(ints(np.int32, 2, 3)), Run(ints(np.int32, 2, 1))],
                     {"axis": 1}, 13),
    "transpose_int64": ("Transpose", [Run(ints(np.int64, 2, 3, 4))], {"perm": [2, 0, 1]}, 13),
    "split_int64": ("Split", [Run(ints(np.int64, 6, 2)), i64(2, 4)], {}, 13, 2),
    "add_int32_wraps": ("Add", [Run(ints(np.int32, 2, 3)), Run(ints(np.int32, 3))], {}, 14),
    "sub_int64_known_scalar": ("Sub", [Run(ints(np.int64, 4)), np.array(7, np.int64)], {}, 14),
    "mul_int64_broadcast": ("Mul", [Run(ints(np.int64, 3, 1)), Run(ints(np.int64, 1, 4))],
                            {}, 14),
}


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("case", sorted(INTEGER_CASES))
def test_integer_op_runs_in_wasm_as_onnxruntime(case: str, kernels: str) -> None:
    for got, want in wasm_and_onnxruntime(INTEGER_CASES[case], kernels):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def _wide_pairs(dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Seeded pairs over the whole range, half of them with small divisors, and the
    extremes (the lowest value over -1 wraps, as in two's complement)."""
    info = np.iinfo(dtype)
    a, b = (_rng.integers(info.min, info.max, 4000, dtype=dtype, endpoint=True)
            for _ in range(2))
    b[:2000] = _rng.integers(-300, 300, 2000)
    a[:7] = [info.min, info.max, info.min, info.max, -7, 7, info.min]
    b[:7] = [1, -1, info.min, info.min, 2, -2, -1]
    b[b == 0] = 3
    return a, b


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op, attrs", [("Div", {}), ("Mod", {"fmod": 0}), ("Mod", {"fmod": 1})])
def test_wide_integer_division_at_run_time_is_exact_in_wasm(dtype, op, attrs, kernels):
    """A float32 quotient refined in integer arithmetic, against Python's integers (Div
    truncates toward zero; results wrap to the dtype)."""
    import runtime

    a, b = _wide_pairs(dtype)
    info = np.iinfo(dtype)
    pairs = zip(a.tolist(), b.tolist())
    if op == "Div":
        exact = [abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) for x, y in pairs]
    elif attrs["fmod"]:
        exact = [x - abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) * y for x, y in pairs]
    else:
        exact = [x % y for x, y in pairs]
    want = np.array([(v - info.min) % 2 ** info.bits + info.min for v in exact], dtype)
    model, feeds = single_node(op, [Run(a), Run(b)], attrs, 13)
    with runtime.load(modelc.export(modelc.from_onnx(model)), kernels=kernels) as session:
        (got,) = session.run(feeds).values()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
