"""What ONNX's conformance cases found wasmnn doing silently wrong, now refused with an error
naming the node or tensor: integer fmod, random dropout, float64 interfaces, models without
inputs, and a conversion from opset 8 that changes the model's inputs."""

from __future__ import annotations

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _info(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def test_integer_pow_by_a_run_time_exponent_is_refused():
    model = _model([helper.make_node("Pow", ["a", "b"], ["y"], name="p")],
                   [_info("a", TensorProto.INT64, [4]), _info("b", TensorProto.INT64, [4])],
                   [_info("y", TensorProto.INT64, [4])])
    with pytest.raises(modelc.CompileError, match=r"'p' \(Pow\): Pow of a int64 base needs a "
                                                  r"scalar exponent known at import time, got "
                                                  r"a int64 tensor"):
        modelc.from_onnx(model)


@pytest.mark.parametrize("mode", ["constant", "input"])
def test_training_mode_dropout_is_refused(mode):
    flag = numpy_helper.from_array(np.array(True), "t")
    inputs = [_info("x", TensorProto.FLOAT, [2, 3]), _info("r", TensorProto.FLOAT, [])]
    if mode == "input":
        inputs.append(_info("t", TensorProto.BOOL, []))
    model = _model([helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="d")], inputs,
                   [_info("y", TensorProto.FLOAT, [2, 3])], [flag] if mode == "constant" else [])
    message = ("training_mode=true .random dropout. is not supported" if mode == "constant"
               else "training_mode .input 2. must be known at import time")
    with pytest.raises(modelc.CompileError, match=r"'d' \(Dropout\): " + message):
        modelc.from_onnx(model)


def test_float64_interface_is_refused_at_export():
    model = _model([helper.make_node("Identity", ["x"], ["y"])],
                   [_info("x", TensorProto.DOUBLE, [3])], [_info("y", TensorProto.DOUBLE, [3])])
    with pytest.raises(modelc.CompileError, match=r"unsupported dtype of input 'x' \(float64\), "
                                                  r"output 'y' \(float64\); model inputs and "
                                                  r"outputs must be one of \['float32'"):
        modelc.export(modelc.from_onnx(model))


@pytest.mark.parametrize("elem, dtype", [(TensorProto.DOUBLE, "float64"),
                                         (TensorProto.UINT32, "uint32")])
def test_interface_dtype_is_refused_before_any_node_lowers(elem, dtype):
    """An op that cannot lower the dtype either must not hide the reason: the interface's
    dtype is what is refused, named by tensor."""
    model = _model([helper.make_node("Transpose", ["x"], ["y"])], [_info("x", elem, [2, 3])],
                   [_info("y", elem, [3, 2])])
    with pytest.raises(modelc.CompileError, match=rf"^unsupported dtype of input 'x' "
                                                  rf"\({dtype}\), output 'y' \({dtype}\)"):
        modelc.export(modelc.from_onnx(model))


def test_model_without_inputs_is_refused_at_export():
    value = numpy_helper.from_array(np.arange(3, dtype=np.float32), "v")
    model = _model([helper.make_node("Constant", [], ["y"], value=value)], [],
                   [_info("y", TensorProto.FLOAT, [3])])
    with pytest.raises(modelc.CompileError, match=r"no run-time inputs: its outputs \['y'\] "
                                                  "are constants"):
        modelc.export(modelc.from_onnx(model))


def test_runtime_dtype_list_is_the_compilers():
    runtime_metadata = pytest.importorskip("runtime.metadata")
    from modelc import metadata

    assert metadata.DTYPES == runtime_metadata.DTYPES


def test_opset8_scan_whose_conversion_drops_the_batch_axis_is_refused():
    """Scan-8 scans a batch axis Scan-9 does not have; the converter drops it from the
    model's inputs, so inputs shaped for the original model would not fit."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "v"], ["s2"]), helper.make_node("Identity", ["s2"],
                                                                        ["o"])],
        "body", [_info("s", TensorProto.FLOAT, [2]), _info("v", TensorProto.FLOAT, [2])],
        [_info("s2", TensorProto.FLOAT, [2]), _info("o", TensorProto.FLOAT, [2])])
    model = _model([helper.make_node("Scan", ["", "init", "x"], ["y", "z"], body=body,
                                     num_scan_inputs=1)],
                   [_info("init", TensorProto.FLOAT, [1, 2]),
                    _info("x", TensorProto.FLOAT, [1, 3, 2])],
                   [_info("y", TensorProto.FLOAT, [1, 2]), _info("z", TensorProto.FLOAT,
                                                                 [1, 3, 2])], opset=8)
    with pytest.warns(UserWarning, match="converting it to opset 9"), \
            pytest.raises(modelc.CompileError, match=r"changed the model's inputs converting it "
                          r"from opset 8 to 9 \('init' rank 2 -> 1, 'x' rank 3 -> 2"):
        modelc.from_onnx(model)


def test_integer_reduce_min_is_refused():
    model = _model([helper.make_node("ReduceMin", ["x"], ["y"], name="m", axes=[0])],
                   [_info("x", TensorProto.INT32, [3, 2])], [_info("y", TensorProto.INT32, None)])
    with pytest.raises(modelc.CompileError, match=r"'m' \(ReduceMin\): ValueError: ReduceMin "
                                                  r"of int32 tensors is not supported"):
        modelc.from_onnx(model)


@pytest.mark.parametrize(("op", "second", "shown"), [
    ("Add", "s", "'seq'"), ("Add", "four", "4"), ("Sub", "four", "4"), ("Mul", "four", "4")])
def test_arithmetic_on_symbolic_dims_is_refused(op, second, shown):
    """numpy would concatenate the names ('past' + 'seq', GPT-2's positions after a past of
    symbolic length), fail on a name plus a number, or repeat a name ('past' * 4); a name
    times 1 stays the name."""
    index = numpy_helper.from_array(np.array([2], np.int64), "two")
    four = numpy_helper.from_array(np.array([4], np.int64), "four")
    nodes = [helper.make_node("Shape", ["past"], ["ps"]),
             helper.make_node("Gather", ["ps", "two"], ["p"]),
             helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Gather", ["xs", "two"], ["s"]),
             helper.make_node(op, ["p", second], ["n"], name="grow"),
             helper.make_node("ConstantOfShape", ["n"], ["y"])]
    model = _model(nodes, [_info("past", TensorProto.FLOAT, [1, 1, "past"]),
                           _info("x", TensorProto.FLOAT, [1, 1, "seq"])],
                   [_info("y", TensorProto.FLOAT, None)], [index, four])
    with pytest.raises(modelc.CompileError, match=rf"'grow' \({op}\): {op} of 'past' and "
                                                  rf"{shown} in a shape computation is not "
                                                  r"supported.*fix 'past' with input_shapes"):
        modelc.from_onnx(model)
