"""linear_point_convs on the convs of squeeze-and-excitation blocks and classifier heads
(1x1 convs over a pooled 1x1 plane): linears, the same result as onnxruntime on every
kernel provider; a 1x1 conv over a larger plane stays a conv."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

_rng = np.random.default_rng(0)


def _squeeze_excite_and_head(bias: bool, batch: int = 2) -> bytes:
    """x -> pool -> conv 6->3 relu -> conv 3->6 sigmoid -> x * s -> pool -> conv 6->9."""
    inits, nodes = [], [helper.make_node("GlobalAveragePool", ["x"], ["p"])]

    def conv(x: str, cin: int, cout: int, y: str) -> None:
        names = [x, f"{y}_w"] + ([f"{y}_b"] if bias else [])
        inits.append(numpy_helper.from_array(
            _rng.standard_normal((cout, cin, 1, 1)).astype(np.float32), f"{y}_w"))
        if bias:
            inits.append(numpy_helper.from_array(
                _rng.standard_normal(cout).astype(np.float32), f"{y}_b"))
        nodes.append(helper.make_node("Conv", names, [y], kernel_shape=[1, 1]))

    conv("p", 6, 3, "c1")
    nodes.append(helper.make_node("Relu", ["c1"], ["r"]))
    conv("r", 3, 6, "c2")
    nodes += [helper.make_node("Sigmoid", ["c2"], ["s"]),
              helper.make_node("Mul", ["x", "s"], ["e"]),
              helper.make_node("GlobalAveragePool", ["e"], ["q"])]
    conv("q", 6, 9, "y")
    graph = helper.make_graph(
        nodes, "se", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 6, 5, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]) \
        .SerializeToString()


@pytest.mark.parametrize("bias", [True, False])
def test_convs_over_one_pixel_become_linears(bias, check_against_ort, check_wasm_against_ort):
    model = _squeeze_excite_and_head(bias)
    x = {"x": _rng.standard_normal((2, 6, 5, 7)).astype(np.float32)}
    graph = check_against_ort(model, [x])
    assert "conv2d" not in graph.ops() and [n.op for n in graph.nodes].count("linear") == 3
    check_wasm_against_ort(model, x)


def test_a_pointwise_conv_over_a_plane_stays_a_conv(check_against_ort):
    w = numpy_helper.from_array(_rng.standard_normal((4, 3, 1, 1)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1])], "pw",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    optimized = check_against_ort(model, [{"x": _rng.standard_normal((1, 3, 2, 1))
                                           .astype(np.float32)}])
    assert optimized.ops() == ["conv2d"]
