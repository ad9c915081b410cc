"""The model-zoo architectures the ``onnx`` package ships for its backend tests
(``onnx/backend/test/data/light``, opset 9), compared with onnxruntime.

Their weights are ``ConstantOfShape`` fills of one value, which makes every class score
equal; the test swaps each fill for a seeded random initializer of the same shape and
also compares the logits before the final Softmax.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
FAST = ["densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet"]
SLOW = ["bvlc_alexnet", "vgg19", "zfnet512"]
"""60M to 143M weights: 6 to 45 s each to generate, import and run; set WASMNN_SLOW=1."""
SLOW_MARKS = [pytest.mark.slow, pytest.mark.skipif(not os.environ.get("WASMNN_SLOW"),
                                                   reason="large weights; set WASMNN_SLOW=1")]


def randomized(path: Path) -> onnx.ModelProto:
    """The model with its weight fills replaced by He-scaled random initializers (1-D
    tensors such as biases and BatchNorm statistics uniform in [0.5, 1.5]) and the
    Softmax inputs added as outputs."""
    model = onnx.load(path)
    graph, rng = model.graph, np.random.default_rng(0)
    shapes = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    nodes = []
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in shapes:
            nodes.append(node)
            continue
        shape = [int(d) for d in shapes[node.input[0]]]
        if len(shape) == 1:
            values = rng.uniform(0.5, 1.5, shape)
        else:
            values = rng.standard_normal(shape) * math.sqrt(2.0 / math.prod(shape[1:]))
        name = node.output[0]
        graph.initializer.append(numpy_helper.from_array(values.astype(np.float32), name))
        graph.input.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape))
    del graph.node[:]
    graph.node.extend(nodes)
    for node in nodes:
        if node.op_type == "Softmax":
            graph.output.append(helper.make_tensor_value_info(node.input[0],
                                                              onnx.TensorProto.FLOAT, None))
    return model


@pytest.mark.parametrize("name", FAST + [pytest.param(n, marks=SLOW_MARKS) for n in SLOW])
def test_light_model_matches_onnxruntime(name, check_against_ort):
    model = randomized(LIGHT / f"light_{name}.onnx")
    start = time.perf_counter()
    graph = modelc.from_onnx(model)
    (data,) = graph.inputs.values()
    x = np.random.default_rng(1).standard_normal(data.shape).astype(np.float32)
    check_against_ort(model, [{data.name: x}])
    assert time.perf_counter() - start < 60
