"""fold_merged_transposes on onnxscript's key transpose in scaled_dot_product_attention
(Reshape to [-1, L, E], Transpose [0, 2, 1], Reshape back): over a symbolic batch it imports
as one transpose of the last two axes, matching onnxruntime; a chain that does not split the
merged axes back imports as its three steps; one whose middle result has another reader is
left alone."""

from __future__ import annotations

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _model(batch: int | str, back: str = "split", extra_reader: bool = False) -> bytes:
    """x (batch, 4, 7, 8) through the chain; ``back``: "split" reshapes to
    ``shape(x)[:-2] + [8, 7]`` as onnxscript does, "flat" to [-1, 56]."""
    inits = [numpy_helper.from_array(np.asarray(v, np.int64), name) for name, v in (
        ("merge", [-1, 7, 8]), ("zero", [0]), ("two", [2]), ("tail", [8, 7]),
        ("flat", [-1, 56]))]
    nodes = [helper.make_node("Reshape", ["x", "merge"], ["m"]),
             helper.make_node("Transpose", ["m"], ["t"], perm=[0, 2, 1]),
             helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "zero", "two"], ["lead"]),
             helper.make_node("Concat", ["lead", "tail"], ["split"], axis=0),
             helper.make_node("Reshape", ["t", back], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_reader:
        nodes.append(helper.make_node("Neg", ["m"], ["z"]))
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "keys", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [batch, 4, 7, 8])], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]) \
        .SerializeToString()


def _x(batch: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(batch).standard_normal((batch, 4, 7, 8))
            .astype(np.float32)}


def test_the_chain_over_a_symbolic_batch_is_one_transpose(check_against_ort) -> None:
    graph = check_against_ort(_model("batch"), [_x(1), _x(3)],
                              dynamic={"x": {0: ("batch", 1, 4)}})
    assert graph.outputs["y"].shape == ("batch", 4, 8, 7)
    assert "reshape" not in graph.ops()


def test_a_chain_that_does_not_split_back_runs_as_its_steps(check_against_ort) -> None:
    check_against_ort(_model(2, back="flat"), [_x(2)])


def test_a_merged_result_read_twice_is_left_alone(check_against_ort) -> None:
    check_against_ort(_model(2, extra_reader=True), [_x(2)])
    with pytest.raises(modelc.CompileError, match=r"cannot infer -1"):
        modelc.from_onnx(_model("batch", extra_reader=True),
                         dynamic={"x": {0: ("batch", 1, 4)}})
