"""frame_strided_convs on 1-D convs of one input channel with a long stride (Silero VAD's
STFT as a Conv): frames and one linear, the same result as onnxruntime on every kernel
provider; other convs stay convs."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

_rng = np.random.default_rng(0)


def _conv(x_shape: tuple[int, ...], w_shape: tuple[int, ...], bias: bool,
          **attrs: object) -> bytes:
    inits = [numpy_helper.from_array(_rng.standard_normal(w_shape).astype(np.float32), "w")]
    inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(
            _rng.standard_normal(w_shape[0]).astype(np.float32), "b"))
        inputs.append("b")
    graph = helper.make_graph([helper.make_node("Conv", inputs, ["y"], **attrs)], "conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]) \
        .SerializeToString()


# id: (input shape, weight shape, bias, attrs); every case is rewritten
FRAMED = {
    "silero_stft": ((2, 1, 1, 832), (258, 1, 1, 256), False, {"strides": [1, 128]}),
    "taps_not_a_multiple_of_stride": ((3, 1, 1, 50), (7, 1, 1, 10), True, {"strides": [1, 4]}),
    "taps_shorter_than_stride": ((1, 1, 1, 40), (5, 1, 1, 3), True, {"strides": [1, 6]}),
    "signal_with_a_tail": ((1, 1, 1, 37), (4, 1, 1, 8), False, {"strides": [1, 4]}),
}


@pytest.mark.parametrize("case", sorted(FRAMED))
def test_strided_conv_becomes_frames_and_a_linear(case, check_against_ort,
                                                  check_wasm_against_ort):
    x_shape, w_shape, bias, attrs = FRAMED[case]
    model = _conv(x_shape, w_shape, bias, **attrs)
    x = {"x": _rng.standard_normal(x_shape).astype(np.float32)}
    graph = check_against_ort(model, [x])
    assert "conv2d" not in graph.ops() and "linear" in graph.ops()
    check_wasm_against_ort(model, x)


@pytest.mark.parametrize("x_shape, w_shape, attrs", [
    ((1, 2, 1, 64), (4, 2, 1, 8), {"strides": [1, 4]}),  # two input channels
    ((1, 1, 1, 64), (4, 1, 1, 8), {"strides": [1, 1]}),  # stride 1
    ((1, 1, 1, 64), (4, 1, 1, 8), {"strides": [1, 4], "pads": [0, 2, 0, 2]}),  # padded
    ((1, 1, 1, 64), (4, 1, 1, 40), {"strides": [1, 4]}),  # ten slices per frame
])
def test_other_convs_stay_convs(x_shape, w_shape, attrs, check_against_ort):
    model = _conv(x_shape, w_shape, True, **attrs)
    graph = check_against_ort(model, [{"x": _rng.standard_normal(x_shape).astype(np.float32)}])
    assert "conv2d" in graph.ops()
