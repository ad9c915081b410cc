"""NonMaxSuppression: a wasm loop into a fixed-capacity tensor whose selected rows the
runtime returns (``rows_from``), on every kernel provider against onnxruntime and onnx's
reference evaluator; a node reading the selection is refused."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

runtime = pytest.importorskip("runtime")
ort = pytest.importorskip("onnxruntime")

_rng = np.random.default_rng(11)


def _boxes(batches, count, center):
    """Boxes clustered around a few centres so that many overlap; some corners flipped."""
    centres = _rng.uniform(0, 10, (batches, 4, 2))[:, _rng.integers(0, 4, count)]
    middle = centres + _rng.normal(0, 0.6, (batches, count, 2))
    size = _rng.uniform(0.5, 3.0, (batches, count, 2))
    if center:
        return np.concatenate([middle, size], axis=2).astype(np.float32)
    low, high = middle - size / 2, middle + size / 2
    boxes = np.concatenate([low, high], axis=2)
    flip = _rng.random((batches, count)) < 0.3
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    return boxes.astype(np.float32)


def _model(batches, classes, count, limit, iou, score=None, center=0, consumer=None):
    consts = [numpy_helper.from_array(np.array([limit], np.int64), "limit"),
              numpy_helper.from_array(np.array([iou], np.float32), "iou")]
    names = ["boxes", "scores", "limit", "iou"]
    if score is not None:
        consts.append(numpy_helper.from_array(np.array([score], np.float32), "score"))
        names.append("score")
    nodes = [helper.make_node("NonMaxSuppression", names, ["selected"], name="nms",
                              center_point_box=center)]
    output = "selected"
    if consumer is not None:
        nodes.append(helper.make_node(consumer, ["selected"], ["after"], name="reader"))
        output = "after"
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [batches, count, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [batches, classes, count])],
        [helper.make_tensor_value_info(output, TensorProto.INT64, None)], consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)


@pytest.mark.parametrize("batches, classes, count, limit, iou, score, center", [
    (1, 1, 30, 10, 0.5, None, 0),
    (2, 3, 40, 100, 0.3, 0.4, 0),
    (2, 2, 25, 5, 0.6, 0.2, 1),
    (1, 4, 50, 3, 0.0, None, 1),
    (3, 1, 12, 12, 0.99, 0.9, 0),
])
def test_nms_matches_onnxruntime_on_every_provider(batches, classes, count, limit, iou, score,
                                                   center):
    model = _model(batches, classes, count, limit, iou, score, center)
    feeds = {"boxes": _boxes(batches, count, center),
             "scores": _rng.random((batches, classes, count)).astype(np.float32)}
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(ReferenceEvaluator(model).run(None, feeds)[0], want)
    assert len(want)
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            got = session.run(feeds)
        np.testing.assert_array_equal(got["selected"], want, err_msg=kernels)
        assert got["selected.count"].tolist() == [len(want)]


def test_nothing_above_the_score_threshold_selects_no_row():
    model = _model(1, 2, 8, 4, 0.5, 2.0)
    feeds = {"boxes": _boxes(1, 8, 0), "scores": _rng.random((1, 2, 8)).astype(np.float32)}
    with runtime.load(modelc.export(modelc.from_onnx(model))) as session:
        got = session.run(feeds)
    assert got["selected"].shape == (0, 3) and got["selected.count"].tolist() == [0]


def test_the_metadata_names_the_row_count():
    wasm = modelc.export(modelc.from_onnx(_model(1, 2, 8, 4, 0.5)))
    with runtime.load(wasm) as session:
        outputs = {t.name: t for t in session.outputs}
    assert outputs["selected"].rows_from == "selected.count"
    assert outputs["selected"].shape == (8, 3)  # 1 batch x 2 classes x 4 steps


@pytest.mark.parametrize("consumer", ["Shape", "ReduceMax"])
def test_a_node_reading_the_selection_across_rows_is_refused(consumer):
    with pytest.raises(modelc.CompileError, match=r"'reader' \(" + consumer + r"\) reads "
                       r"\['selected'\], whose rows are counted at run time \(from \['nms'\]\); "
                       "only ops that keep rows as rows"):
        modelc.from_onnx(_model(1, 2, 8, 4, 0.5, consumer=consumer))


def _torchvision_style(count):
    """``boxes[nms(boxes, scores, 0.5)]`` as torchvision exports it: the selection's box
    column, squeezed, indexes the boxes and the scores."""
    big = numpy_helper.from_array(np.array([2**63 - 1], np.int64), "limit")
    consts = [big, numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
              numpy_helper.from_array(np.array([2], np.int64), "column"),
              numpy_helper.from_array(np.array([0], np.int64), "zero"),
              numpy_helper.from_array(np.array([0, 1], np.int64), "zero_one"),
              numpy_helper.from_array(np.array([1], np.int64), "one")]
    nodes = [helper.make_node("Unsqueeze", ["boxes", "zero"], ["b3"]),
             helper.make_node("Unsqueeze", ["scores", "zero_one"], ["s3"]),
             helper.make_node("NonMaxSuppression", ["b3", "s3", "limit", "iou"], ["sel"],
                              name="nms"),
             helper.make_node("Gather", ["sel", "column"], ["col"], axis=1),
             helper.make_node("Squeeze", ["col", "one"], ["keep"]),
             helper.make_node("Gather", ["boxes", "keep"], ["kept_boxes"]),
             helper.make_node("Gather", ["scores", "keep"], ["kept_scores"]),
             helper.make_node("Mul", ["kept_scores", "kept_scores"], ["squared"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [count, 4]),
                     helper.make_tensor_value_info("scores", TensorProto.FLOAT, [count])],
        [helper.make_tensor_value_info(o, e, None) for o, e in (
            ("keep", TensorProto.INT64), ("kept_boxes", TensorProto.FLOAT),
            ("squared", TensorProto.FLOAT))], consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_ops_that_keep_rows_carry_the_row_count():
    model = _torchvision_style(60)
    feeds = {"boxes": _boxes(1, 60, 0)[0], "scores": _rng.random(60).astype(np.float32)}
    want = dict(zip(["keep", "kept_boxes", "squared"], ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)))
    assert 0 < len(want["keep"]) < 60
    wasm = modelc.export(modelc.from_onnx(model))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            got = session.run(feeds)
        for name, value in want.items():
            np.testing.assert_array_equal(got[name], value, err_msg=f"{name} on {kernels}")
            assert got[f"{name}.count"].tolist() == [len(want["keep"])]


def test_run_time_thresholds_are_refused():
    model = _model(1, 2, 8, 4, 0.5)
    del model.graph.initializer[1:]
    model.graph.input.append(helper.make_tensor_value_info("iou", TensorProto.FLOAT, [1]))
    with pytest.raises(modelc.CompileError, match=r"'nms' \(NonMaxSuppression\): iou_threshold "
                                                  r"\(input 3\) must be known at import time"):
        modelc.from_onnx(model)


def test_nms_of_known_boxes_folds_to_its_selection():
    model = _model(2, 2, 10, 4, 0.4, 0.2)
    feeds = {"boxes": _boxes(2, 10, 0), "scores": _rng.random((2, 2, 10)).astype(np.float32)}
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    model.graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in feeds.items())
    del model.graph.input[:]
    np.testing.assert_array_equal(modelc.from_onnx(model).outputs["selected"].data, want)


def test_lying_row_count_metadata_is_caught():
    from test_session import _meta, _with_metadata

    wasm = modelc.export(modelc.from_onnx(_model(1, 2, 8, 4, 0.5)))
    meta = _meta(wasm)
    selected = next(t for t in meta["outputs"] if t["name"] == "selected")
    selected["rows_from"] = "selected"
    with pytest.raises(runtime.ModelFormatError, match=r"tensor 'selected' has rows_from "
                                                       r"'selected'; expected an output"):
        runtime.load(_with_metadata(wasm, meta))
    selected["rows_from"] = "boxes"
    with pytest.raises(runtime.ModelFormatError, match="has rows_from 'boxes'"):
        runtime.load(_with_metadata(wasm, meta))
