"""RoiAlign with rois and batch indices computed at run time, on every kernel provider against
onnx's reference evaluator and onnxruntime: both modes, both coordinate modes, rois partly and
wholly outside the input, several sampling ratios and scales."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

runtime = pytest.importorskip("runtime")
ort = pytest.importorskip("onnxruntime")

_rng = np.random.default_rng(17)


def _model(x_shape, count, opset=16, **attrs):
    node = helper.make_node("RoiAlign", ["x", "rois", "batches"], ["y"], name="ra", **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
                      helper.make_tensor_value_info("rois", TensorProto.FLOAT, [count, 4]),
                      helper.make_tensor_value_info("batches", TensorProto.INT64, [count])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _feeds(x_shape, count, scale):
    height, width = x_shape[2] / scale, x_shape[3] / scale
    low = _rng.uniform([-0.3 * width, -0.3 * height], [width, height], (count, 2))
    size = _rng.uniform(0.2, 0.6, (count, 2)) * [width, height]
    rois = np.concatenate([low, low + size], axis=1).astype(np.float32)
    rois[0] = [width + 3, height + 2, width + 9, height + 5]  # wholly outside
    return {"x": _rng.standard_normal(x_shape).astype(np.float32), "rois": rois,
            "batches": _rng.integers(0, x_shape[0], count).astype(np.int64)}


@pytest.mark.parametrize("mode, coordinates, ratio, scale", [
    ("avg", "half_pixel", 2, 1.0), ("avg", "output_half_pixel", 1, 0.5),
    ("max", "half_pixel", 3, 0.25), ("max", "output_half_pixel", 2, 1.0),
])
def test_roi_align_matches_references_on_every_provider(mode, coordinates, ratio, scale):
    x_shape, count = (2, 3, 10, 12), 6
    model = _model(x_shape, count, mode=mode, coordinate_transformation_mode=coordinates,
                   sampling_ratio=ratio, spatial_scale=scale, output_height=3, output_width=4)
    feeds = _feeds(x_shape, count, scale)
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    if mode == "avg":  # NOTE: onnxruntime's max mode takes the largest corner unweighted
        got = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            got = session.run(feeds)["y"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=kernels)


def test_opset10_uses_output_half_pixel_coordinates():
    x_shape, count = (1, 2, 8, 8), 3
    model = _model(x_shape, count, opset=10, sampling_ratio=2, output_height=2, output_width=2)
    feeds = _feeds(x_shape, count, 1.0)
    # NOTE: onnx's reference evaluator applies opset 16's default (half_pixel) to opset 10
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    with runtime.load(modelc.export(modelc.from_onnx(model))) as session:
        np.testing.assert_allclose(session.run(feeds)["y"], want, rtol=1e-4, atol=1e-5)


def test_adaptive_sampling_is_refused():
    with pytest.raises(modelc.CompileError, match=r"'ra' \(RoiAlign\): sampling_ratio 0 "
                                                  r"\(adaptive"):
        modelc.from_onnx(_model((1, 2, 8, 8), 3))
