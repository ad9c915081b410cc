"""GridSample (``nn.functional.grid_sample``): every mode, padding mode and align_corners on
4-D inputs, and 5-D inputs, in wasm on every kernel provider against onnxruntime and onnx's
reference evaluator, and eagerly against torch; grids reach past the input's edges so that
every padding mode is exercised."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
from nn import functional as F

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

runtime = pytest.importorskip("runtime")

_rng = np.random.default_rng(7)


def _model(x_shape, grid_shape, opset, **attrs):
    out = [x_shape[0], x_shape[1], *grid_shape[1:-1]]
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="gs", **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
                      helper.make_tensor_value_info("grid", TensorProto.FLOAT, grid_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _inputs(x_shape, grid_shape):
    x = _rng.standard_normal(x_shape).astype(np.float32)
    grid = _rng.uniform(-1.4, 1.4, grid_shape).astype(np.float32)
    return {"x": x, "grid": grid}


def _run_everywhere(model, feeds, reference=True):
    """wasm on every provider against onnxruntime and (unless told) onnx's reference."""
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    if reference:
        np.testing.assert_allclose(ReferenceEvaluator(model).run(None, feeds)[0], want,
                                   rtol=1e-4, atol=1e-5)
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            got = session.run(feeds)["y"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=kernels)


@pytest.mark.parametrize("mode, padding, align", list(itertools.product(
    ["linear", "nearest", "cubic"], ["zeros", "border", "reflection"], [0, 1])))
def test_grid_sample_4d_matches_references_on_every_provider(mode, padding, align):
    x_shape, grid_shape = (2, 3, 5, 7), (2, 4, 6, 2)
    model = _model(x_shape, grid_shape, 20, mode=mode, padding_mode=padding,
                   align_corners=align)
    # NOTE: onnx's reference clamps a bicubic point into the input before taking its taps;
    # onnxruntime and torch clamp only the taps (wasmnn follows them)
    _run_everywhere(model, _inputs(x_shape, grid_shape),
                    reference=(mode, padding) != ("cubic", "border"))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_opset16_mode_names(mode):
    x_shape, grid_shape = (1, 2, 4, 4), (1, 3, 3, 2)
    # NOTE: onnx's reference evaluator knows only opset 20's names
    _run_everywhere(_model(x_shape, grid_shape, 16, mode=mode), _inputs(x_shape, grid_shape),
                    reference=False)


@pytest.mark.parametrize("mode, padding", [("linear", "zeros"), ("nearest", "border"),
                                           ("linear", "reflection")])
def test_grid_sample_5d_matches_references_on_every_provider(mode, padding):
    x_shape, grid_shape = (1, 2, 3, 4, 5), (1, 2, 3, 4, 3)
    model = _model(x_shape, grid_shape, 20, mode=mode, padding_mode=padding)
    _run_everywhere(model, _inputs(x_shape, grid_shape))


@pytest.mark.parametrize("mode, padding, align", [("bilinear", "zeros", False),
                                                  ("bicubic", "reflection", True),
                                                  ("bicubic", "border", False),
                                                  ("nearest", "border", False),
                                                  ("bilinear", "reflection", False)])
def test_eager_grid_sample_matches_torch(mode, padding, align):
    torch = pytest.importorskip("torch")
    feeds = _inputs((2, 3, 6, 5), (2, 4, 3, 2))
    got = F.grid_sample(feeds["x"], feeds["grid"], mode, padding, align)
    want = torch.nn.functional.grid_sample(torch.from_numpy(feeds["x"]),
                                           torch.from_numpy(feeds["grid"]), mode=mode,
                                           padding_mode=padding, align_corners=align)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)


def test_single_pixel_axis_reflects_onto_it():
    x_shape, grid_shape = (1, 2, 1, 4), (1, 2, 3, 2)
    model = _model(x_shape, grid_shape, 20, padding_mode="reflection", align_corners=1)
    # NOTE: onnx's reference evaluator divides by the zero span of that axis
    _run_everywhere(model, _inputs(x_shape, grid_shape), reference=False)


def test_bicubic_5d_and_a_symbolic_batch_are_refused():
    model = _model((1, 2, 3, 4, 5), (1, 2, 3, 4, 3), 20, mode="cubic")
    with pytest.raises(modelc.CompileError, match=r"'gs' \(GridSample\): grid_sample: bicubic "
                                                  r"samples 4-D inputs only"):
        modelc.from_onnx(model)
    model = _model(["n", 2, 4, 4], ["n", 3, 3, 2], 20)
    with pytest.raises(modelc.CompileError, match=r"'gs' \(GridSample\): grid_sample: input "
                                                  r"shape \['n', 2, 4, 4\] must be fixed"):
        modelc.from_onnx(model)
