"""A model that computes in float16 or bfloat16 is refused before any node imports, naming
every half-precision input, output, cast, constant and initializer (inside subgraphs too); a
float32 model with the same ops imports and matches onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
TensorProto, helper, numpy_helper = onnx.TensorProto, onnx.helper, onnx.numpy_helper


def _model(half: int | None, inner: bool = False):
    """x (float32) -> Cast to ``half`` -> Mul by a ``half`` weight -> Cast back, or all in
    float32 when ``half`` is None; with ``inner`` the Mul is in an If branch."""
    kind = TensorProto.FLOAT if half is None else half
    weight = numpy_helper.from_array(np.full((3,), 1.5, np.float32), "w")
    if half is not None:
        weight = helper.make_tensor("w", half, [3], [1.5, 1.5, 1.5])
    mul = helper.make_node("Mul", ["xh", "w"], ["yh"], name="mul")
    branch = helper.make_graph([mul], "branch", [],
                               [helper.make_tensor_value_info("yh", kind, [3])])
    body = [helper.make_node("If", ["flag"], ["yh"], name="if", then_branch=branch,
                             else_branch=branch)] if inner else [mul]
    nodes = [helper.make_node("Cast", ["x"], ["xh"], name="to_half", to=kind), *body,
             helper.make_node("Cast", ["yh"], ["y"], name="back", to=TensorProto.FLOAT)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])]
    if inner:
        inputs.append(helper.make_tensor_value_info("flag", TensorProto.BOOL, []))
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
                              [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("half, name", [(TensorProto.FLOAT16, "float16"),
                                        (TensorProto.BFLOAT16, "bfloat16")])
def test_half_precision_is_refused_naming_every_place(half, name):
    with pytest.raises(modelc.CompileError) as refused:
        modelc.from_onnx(_model(half))
    message = str(refused.value)
    assert "computes in half precision" in message and "2 place(s)" in message
    assert f"Cast 'to_half' to {name}" in message
    assert f"initializer 'w' ({name})" in message


def test_half_precision_inside_a_branch_is_named():
    with pytest.raises(modelc.CompileError, match=r"'if'.then_branch > output 'yh' "
                                                  r"\(float16\)"):
        modelc.from_onnx(_model(TensorProto.FLOAT16, inner=True))


def test_the_float32_twin_imports_and_matches_onnxruntime(check_wasm_against_ort):
    check_wasm_against_ort(_model(None), {"x": np.array([1.0, -2.0, 3.5], np.float32)})
