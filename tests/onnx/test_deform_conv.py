"""DeformConv with offsets and masks computed at run time, on every kernel provider against
onnx's reference evaluator: groups, offset groups, strides, dilations, pads, bias, and
offsets that move taps outside the input."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

runtime = pytest.importorskip("runtime")

_rng = np.random.default_rng(19)


def _out(size, kernel, stride, dilation, pad):
    return (size + 2 * pad - (kernel - 1) * dilation - 1) // stride + 1


@pytest.mark.parametrize("group, offset_group, stride, dilation, pad, masked", [
    (1, 1, 1, 1, 0, False), (2, 2, 2, 1, 1, True), (1, 2, 1, 2, 1, False),
    (2, 1, 1, 1, 2, True)])
def test_deform_conv_matches_the_reference_on_every_provider(group, offset_group, stride,
                                                             dilation, pad, masked):
    n, c, h, w, oc, k = 2, 4, 7, 8, 6, 3
    oh, ow = (_out(s, k, stride, dilation, pad) for s in (h, w))
    weight = _rng.standard_normal((oc, c // group, k, k)).astype(np.float32)
    bias = _rng.standard_normal(oc).astype(np.float32)
    feeds = {"x": _rng.standard_normal((n, c, h, w)).astype(np.float32),
             "offset": (_rng.standard_normal((n, offset_group * k * k * 2, oh, ow)) * 2
                        ).astype(np.float32)}
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w]),
              helper.make_tensor_value_info("offset", TensorProto.FLOAT,
                                            list(feeds["offset"].shape))]
    names = ["x", "w", "offset", "b"]
    if masked:
        feeds["mask"] = _rng.random((n, offset_group * k * k, oh, ow)).astype(np.float32)
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT,
                                                    list(feeds["mask"].shape)))
        names.append("mask")
    node = helper.make_node("DeformConv", names, ["y"], name="dc", group=group,
                            offset_group=offset_group, strides=[stride] * 2,
                            dilations=[dilation] * 2, pads=[pad] * 4, kernel_shape=[k, k])
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(weight, "w"),
                               numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            got = session.run(feeds)["y"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=kernels)
