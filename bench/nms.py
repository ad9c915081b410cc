"""NonMaxSuppression (``f32_non_max_suppression``) beside onnxruntime on YOLO-sized inputs:
8400 boxes in a 640x640 image, 1 thread each, timed in interleaved rounds in thread CPU
time (``bench/kernels.py``), medians; the selections must be equal. No result is asserted.

Cases: 80 classes keeping <= 100 each with a score threshold that leaves ~6 candidates per
class (what a detector's output meets), the same with no threshold (every class keeps 100),
and 1 class keeping <= 300 with no threshold. Run: ``.venv/bin/python bench/nms.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from functools import partial
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import modelc
import runtime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import interleaved_seconds  # noqa: E402

BOXES = 8400
# name: (classes, max_output_boxes_per_class, score_threshold or None)
CASES: dict[str, tuple[int, int, float | None]] = {
    "80 classes, ~6 candidates each, k 100": (80, 100, 1 - 6 / BOXES),
    "80 classes, all candidates, k 100": (80, 100, None),
    "1 class, all candidates, k 300": (1, 300, None),
}


def _model(classes: int, limit: int, floor: float | None) -> onnx.ModelProto:
    consts = [numpy_helper.from_array(np.array([limit], np.int64), "limit"),
              numpy_helper.from_array(np.array([0.5], np.float32), "iou")]
    if floor is not None:
        consts.append(numpy_helper.from_array(np.array([floor], np.float32), "score"))
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores", *(c.name for c in consts)],
                            ["selected"])
    graph = helper.make_graph(
        [node], "nms",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, BOXES, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, classes, BOXES])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, None)], consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)


def _feeds(classes: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Boxes of 10-100 pixels anywhere in a 640x640 image, uniform scores."""
    middle = rng.uniform(0, 640, (1, BOXES, 2))
    size = rng.uniform(10, 100, (1, BOXES, 2))
    boxes = np.concatenate([middle - size / 2, middle + size / 2], axis=2)
    return {"boxes": boxes.astype(np.float32),
            "scores": rng.random((1, classes, BOXES)).astype(np.float32)}


def main() -> None:
    import onnxruntime as ort

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"load {os.getloadavg()[0]:.1f}; thread CPU ms, medians of {args.repeat} rounds")
    print(f"{'case':40} {'kept':>6} {'wasmnn':>8} {'ort':>8} {'ort/wasmnn':>10}")
    for name, (classes, limit, floor) in CASES.items():
        model = _model(classes, limit, floor)
        feeds = _feeds(classes, rng)
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        peer = ort.InferenceSession(model.SerializeToString(), options,
                                    providers=["CPUExecutionProvider"])
        session: Any = runtime.load(modelc.export(modelc.from_onnx(model)), threads=1)
        want = peer.run(None, feeds)[0]
        got = session.run(feeds)["selected"]
        if not np.array_equal(got, want):
            raise SystemExit(f"{name}: the selections differ ({len(got)} vs {len(want)} rows)")
        times = interleaved_seconds({"wasmnn": partial(session.run, feeds),
                                     "ort": partial(peer.run, None, feeds)}, args.repeat)
        ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        ratio = statistics.median(o / w for w, o in zip(times["wasmnn"], times["ort"]))
        print(f"{name:40} {len(want):6} {ms['wasmnn']:8.2f} {ms['ort']:8.2f} {ratio:10.2f}")
        session.close()


if __name__ == "__main__":
    main()
