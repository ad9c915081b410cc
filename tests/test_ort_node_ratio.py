"""``bench/ort_node_ratio.py`` maps onnxruntime's profiled kernels and our profiled nodes back
to the ONNX nodes they run: every conv of a small model on both sides, labelled by the
shapes the model was built with, its FLOPs by the textbook formula."""

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import modelc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from ort_node_ratio import label_flops, onnxruntime, ours  # noqa: E402

CONVS = {"stem": "k3x3/1 8->16 @16x16", "point": "k1x1/1 16->16 @16x16",
         "grouped": "k3x3/2 16->4/g4 @8x8"}


def _model(path: Path) -> None:
    """stem conv -> batch norm -> relu -> 1x1 conv -> + relu output -> relu -> grouped 3x3/2."""
    rng = np.random.default_rng(0)

    def init(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="stem", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c0", "g", "beta", "mean", "var"], ["n0"],
                         name="norm"),
        helper.make_node("Relu", ["n0"], ["r0"], name="relu0"),
        helper.make_node("Conv", ["r0", "w1"], ["c1"], name="point"),
        helper.make_node("Add", ["c1", "r0"], ["a1"], name="add"),
        helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], name="grouped", group=4,
                         strides=[2, 2], pads=[1, 1, 1, 1]),
    ]
    weights = [init("w0", 16, 8, 3, 3), init("b0", 16), init("w1", 16, 16, 1, 1),
               init("w2", 4, 4, 3, 3), init("b2", 4), init("g", 16), init("beta", 16),
               init("mean", 16),
               numpy_helper.from_array(np.full(16, 2.0, np.float32), "var")]
    graph = helper.make_graph(nodes, "convs",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             [1, 4, 8, 8])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_every_conv_maps_on_both_sides(tmp_path):
    path = tmp_path / "convs.onnx"
    _model(path)
    inputs = {"x": np.random.default_rng(1).standard_normal((1, 8, 16, 16), np.float32)}
    _, theirs, labels = onnxruntime(path, inputs, runs=2)
    assert {k: v for k, v in labels.items() if k in CONVS} == CONVS
    assert not [k for k in theirs if k.startswith("(ort) Conv")]
    graph = modelc.optimize(modelc.from_onnx(str(path), input_shapes={"x": (1, 8, 16, 16)}))
    _, mine, kernels = ours(graph, inputs, runs=2)
    assert set(CONVS) <= set(mine) and set(CONVS) <= set(kernels)
    assert all(mine[k] > 0 and theirs[k] > 0 for k in CONVS)


def test_label_flops_is_the_layer_formula():
    assert label_flops(CONVS["stem"]) == 2 * 16 * 8 * 9 * 16 * 16
    assert label_flops(CONVS["point"]) == 2 * 16 * 16 * 16 * 16
    assert label_flops(CONVS["grouped"]) == 2 * 4 * 4 * 9 * 8 * 8
