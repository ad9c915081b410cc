"""phase_conv_transposes on strided ConvTranspose nodes (decoder upsampling): one conv2d and a
pixel shuffle, the same result as onnxruntime in the interpreter and on every kernel
provider; transposes it cannot cover stay transposes."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

_rng = np.random.default_rng(0)


def _transpose(shape: tuple[int, ...], cout: int, kernel: tuple[int, int], bias: bool,
               **attrs: object) -> bytes:
    weight = _rng.standard_normal((shape[1], cout, *kernel)).astype(np.float32)
    inits = [numpy_helper.from_array(weight, "w")]
    if bias:
        inits.append(numpy_helper.from_array(_rng.standard_normal(cout).astype(np.float32),
                                             "b"))
    node = helper.make_node("ConvTranspose", ["x", "w"] + (["b"] if bias else []), ["y"],
                            kernel_shape=list(kernel), **attrs)
    graph = helper.make_graph(
        [node, helper.make_node("Relu", ["y"], ["r"])], "up",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]) \
        .SerializeToString()


CASES = [  # (input shape, cout, kernel, attrs)
    ((1, 5, 4, 6), 3, (4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # ViT/U-Net decoder
    ((2, 3, 5, 4), 4, (2, 2), {"strides": [2, 2]}),
    ((1, 4, 3, 5), 2, (3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1],
                               "output_padding": [1, 1]}),
    ((1, 3, 4, 3), 5, (3, 5), {"strides": [3, 2], "pads": [0, 2, 0, 2]}),
    ((1, 2, 3, 3), 3, (5, 1), {"strides": [2, 1], "pads": [2, 0, 2, 0],
                               "output_padding": [1, 0]}),
    ((1, 6, 4, 4), 2, (4, 4), {"strides": [4, 4]}),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape,cout,kernel,attrs", CASES)
def test_strided_transposes_become_phase_convs(shape, cout, kernel, attrs, bias,
                                               check_against_ort, check_wasm_against_ort):
    model = _transpose(shape, cout, kernel, bias, **attrs)
    x = {"x": _rng.standard_normal(shape).astype(np.float32)}
    graph = check_against_ort(model, [x])
    assert "conv_transpose2d" not in graph.ops() and "conv2d" in graph.ops()
    check_wasm_against_ort(model, x)


@pytest.mark.parametrize("attrs", [
    {"strides": [1, 1], "pads": [1, 1, 1, 1]},  # stride 1: already a dense scatter
    {"strides": [2, 2], "dilations": [2, 2]},
    {"strides": [2, 2], "output_padding": [1, 1]},  # a row past every tap: bias only
])
def test_transposes_the_phases_do_not_cover_stay(attrs, check_against_ort):
    shape = (1, 2, 3, 3)
    model = _transpose(shape, 3, (2, 2), True, **attrs)
    graph = check_against_ort(model, [{"x": _rng.standard_normal(shape).astype(np.float32)}])
    assert "conv_transpose2d" in graph.ops()
