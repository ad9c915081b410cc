"""f32_non_max_suppression on every provider against ``nn.functional.non_max_suppression``
(itself checked against onnxruntime in tests/onnx/test_nms.py): corners in either order and
centre-size boxes, tied and -inf scores, a score floor or none, negative and zero IoU
thresholds, k below and at the box count, more than one batch and class."""

import numpy as np
import pytest

from nn import functional as F
from wasm_kernels import abi


def _boxes(rng, batches, n, center):  # type: ignore[no-untyped-def]
    """Boxes around a few centres (so many overlap), some degenerate, some flipped."""
    middle = rng.uniform(0, 6, (batches, 3, 2))[:, rng.integers(0, 3, n)]
    middle = middle + rng.normal(0, 0.5, (batches, n, 2))
    size = rng.uniform(0, 3, (batches, n, 2)) * (rng.random((batches, n, 1)) > 0.1)
    if center:
        return np.concatenate([middle, size], axis=2).astype(np.float32)
    boxes = np.concatenate([middle - size / 2, middle + size / 2], axis=2)
    flip = rng.random((batches, n)) < 0.4
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    return boxes.astype(np.float32)


@pytest.mark.parametrize("batches, classes, n, k, iou, floor, center", [
    (1, 1, 1, 1, 0.5, None, 0),
    (1, 3, 40, 40, 0.5, None, 0),
    (2, 2, 33, 5, 0.3, 0.4, 1),
    (1, 2, 25, 25, 0.0, 0.0, 0),
    (2, 1, 20, 7, -0.5, None, 0),
    (1, 4, 64, 64, 0.7, -np.inf, 1),
    (1, 2, 30, 0, 0.5, None, 0),
    (1, 1, 30, 30, 0.9, 2.0, 0),
])
def test_nms(kernels, batches, classes, n, k, iou, floor, center):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(n + k)
    boxes = _boxes(rng, batches, n, center)
    # few distinct scores, so ties occur, with -inf among them
    scores = rng.choice(np.array([-np.inf, 0.0, 0.1, 0.5, 0.55, 0.9, 1.0], np.float32),
                        (batches, classes, n))
    want, count = F.non_max_suppression(boxes, scores, k, iou, floor, bool(center))
    capacity = batches * classes * k
    out = kernels.call(abi.NMS.name, offset=4, boxes=boxes, scores=scores,
                       selected=kernels.inout(np.full((capacity, 3), 7, np.int64)),
                       count=kernels.output((1,), np.int64),
                       scratch=(abi.nms_scratch_floats(n, k),), batches=batches,
                       classes=classes, n=n, k=k, center=center, floored=int(floor is not None),
                       iou=iou, floor=0.0 if floor is None else floor)
    np.testing.assert_array_equal(out["count"], count)
    np.testing.assert_array_equal(out["selected"], want)
    assert (count[0] == 0) == (k == 0 or floor == 2.0)  # each case selects, but these


def test_the_reference_matches_a_brute_force_greedy_selection() -> None:
    """The reference against the definition: pairs' IoU from the corners in float64."""
    rng = np.random.default_rng(5)
    boxes = _boxes(rng, 1, 50, 0)[0]
    scores = rng.random(50).astype(np.float32)
    rows, count = F.non_max_suppression(boxes[None], scores[None, None], 50, 0.4)
    low = np.minimum(boxes[:, :2], boxes[:, 2:]).astype(np.float64)
    high = np.maximum(boxes[:, :2], boxes[:, 2:]).astype(np.float64)
    kept: list[int] = []
    for box in np.argsort(-scores, kind="stable"):
        overlap = np.prod(np.clip(np.minimum(high[kept], high[box]) - np.maximum(
            low[kept], low[box]), 0, None), axis=1)
        union = np.prod(high[kept] - low[kept], 1) + np.prod(high[box] - low[box]) - overlap
        with np.errstate(invalid="ignore"):  # two empty boxes: 0 / 0, not over
            if not np.any(overlap / union > 0.4):
                kept.append(int(box))
    assert rows[:count[0], 2].tolist() == kept
