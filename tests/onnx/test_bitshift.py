"""BitShift (opset 28's signed integers, opset 11's unsigned) by known shift amounts, in wasm
on every kernel provider against onnx's reference evaluator (and onnxruntime, which has only
opset 11's unsigned shifts): extremes, negative values, shifts past the width and negative
shifts."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

runtime = pytest.importorskip("runtime")

_rng = np.random.default_rng(13)


def _model(x, shift, direction, opset):
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    node = helper.make_node("BitShift", ["x", "shift"], ["y"], name="bs", direction=direction)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, x.shape)],
        [helper.make_tensor_value_info("y", elem, x.shape)],
        [numpy_helper.from_array(shift, "shift")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=10)


def _values(dtype):
    info = np.iinfo(dtype)
    extremes = np.array([info.min, info.max, 0, 1, -1 if info.min else 2, 5], dtype)
    return np.concatenate([extremes, _rng.integers(info.min, info.max, 26, dtype=dtype,
                                                   endpoint=True)]).reshape(4, 8)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16])
def test_bitshift_matches_the_reference_on_every_provider(dtype, direction):
    x = _values(dtype)
    width = np.dtype(dtype).itemsize * 8
    low = 0 if np.dtype(dtype).kind == "u" else -3
    shift = _rng.integers(low, width + 3, (1, 8)).astype(dtype)  # broadcast over rows
    shift[0, :3] = [0, width - 1, width]
    model = _model(x, shift, direction, 28)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    if np.dtype(dtype).kind == "u":
        ort = pytest.importorskip("onnxruntime")
        opset11 = _model(x, shift, direction, 11)
        ort_out = ort.InferenceSession(opset11.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": x})
        np.testing.assert_array_equal(ort_out[0][:, 3:], want[:, 3:])  # C masks wide shifts
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            got = session.run({"x": x})["y"]
        np.testing.assert_array_equal(got, want, err_msg=kernels)


def test_a_run_time_shift_and_wide_unsigned_values_are_refused():
    x = np.arange(4, dtype=np.int32)
    model = _model(x, np.ones(4, np.int32), "LEFT", 28)
    del model.graph.initializer[:]
    model.graph.input.append(helper.make_tensor_value_info("shift", 6, [4]))
    with pytest.raises(modelc.CompileError, match=r"'bs' \(BitShift\): shift amount \(input 1\) "
                                                  "must be known at import time"):
        modelc.from_onnx(model)
    x = np.arange(4, dtype=np.uint32)
    with pytest.raises(modelc.CompileError, match=r"'bs' \(BitShift\): shifts signed integers "
                                                  "and unsigned ones up to 16 bits, got uint32"):
        modelc.from_onnx(_model(x, np.ones(4, np.uint32), "RIGHT", 28))
