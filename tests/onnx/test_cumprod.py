"""CumProd (opset 26; ``nn.functional.cumprod``, by doubling): every attribute on float32 and
wrapping int32/int64, in wasm on every kernel provider against onnx's reference evaluator
(onnxruntime has no CumProd yet), and eagerly against torch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
from nn import functional as F

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

runtime = pytest.importorskip("runtime")

_rng = np.random.default_rng(3)


def _model(x, axis, **attrs):
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], name="cp", **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, x.shape)],
        [helper.make_tensor_value_info("y", elem, x.shape)],
        [numpy_helper.from_array(np.array(axis, np.int64), "axis")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)], ir_version=10)


def _values(dtype, shape):
    if dtype == np.float32:
        # NOTE: near 1 so that 9 factors stay well scaled; a zero checks it does not poison
        x = _rng.uniform(0.5, 1.5, shape).astype(np.float32) * _rng.choice([-1, 1], shape)
        x.flat[3] = 0.0
        return x.astype(np.float32)
    return _rng.integers(-300, 300, shape).astype(dtype)  # products wrap


@pytest.mark.parametrize("dtype, axis, exclusive, reverse", [
    (dtype, axis, e, r) for dtype in (np.float32, np.int32, np.int64)
    for axis, (e, r) in itertools.product((1, -1), itertools.product((0, 1), (0, 1)))])
def test_cumprod_matches_the_reference_on_every_provider(dtype, axis, exclusive, reverse):
    x = _values(dtype, (2, 9, 5) if axis == 1 else (3, 2, 9))
    model = _model(x, axis, exclusive=exclusive, reverse=reverse)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            got = session.run({"x": x})["y"]
        if dtype == np.float32:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=kernels)
        else:
            np.testing.assert_array_equal(got, want, err_msg=kernels)


def test_cumprod_of_a_known_tensor_folds():
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    model = _model(x, 1)
    model.graph.initializer.append(numpy_helper.from_array(x, "x"))
    del model.graph.input[:]
    imported = modelc.from_onnx(model)
    np.testing.assert_array_equal(imported.outputs["y"].data, np.cumprod(x, 1))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_eager_cumprod_matches_torch(dim):
    torch = pytest.importorskip("torch")
    x = _values(np.float32, (4, 7))
    np.testing.assert_allclose(F.cumprod(x, dim), torch.cumprod(torch.from_numpy(x), dim),
                               rtol=1e-6, atol=1e-7)
