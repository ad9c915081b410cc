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
from test_ops import Run, single_node, wasm_and_onnxruntime

import modelc

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
