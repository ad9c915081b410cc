"""Object-detection ops: greedy non-maximum suppression (ONNX's NonMaxSuppression)."""

from __future__ import annotations

import numpy as np

from .._dispatch import primitive

__all__ = ["non_max_suppression"]


def _corners(boxes: np.ndarray, center: bool) -> np.ndarray:
    """``(..., 5)``: each box's low and high first coordinate, low and high second one and
    area, from two corners in either order or (``center``) a centre and a size."""
    a, c, d, e = (boxes[..., k] for k in range(4))
    if center:
        low_a, high_a, low_c, high_c = a - d * 0.5, a + d * 0.5, c - e * 0.5, c + e * 0.5
    else:
        low_a, high_a = np.minimum(a, d), np.maximum(a, d)
        low_c, high_c = np.minimum(c, e), np.maximum(c, e)
    area = (high_a - low_a) * (high_c - low_c)
    return np.stack([low_a, high_a, low_c, high_c, area], axis=-1)


def _suppressed(kept: np.ndarray, box: np.ndarray, iou_threshold: np.float32) -> bool:
    """Whether a box kept before (rows of ``kept``) overlaps ``box`` with IoU over the
    threshold; boxes that do not overlap never suppress (even at a negative threshold)."""
    across_a = np.minimum(kept[:, 1], box[1]) - np.maximum(kept[:, 0], box[0])
    across_c = np.minimum(kept[:, 3], box[3]) - np.maximum(kept[:, 2], box[2])
    overlap = np.maximum(across_a, 0) * np.maximum(across_c, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = overlap / ((box[4] + kept[:, 4]) - overlap)
    return bool(np.any((overlap > 0) & (iou > iou_threshold)))


@primitive
def non_max_suppression(boxes: np.ndarray, scores: np.ndarray, max_output_boxes_per_class: int,
                        iou_threshold: float = 0.0, score_threshold: float | None = None,
                        center_point_box: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Greedy non-maximum suppression, as ONNX's NonMaxSuppression, into a fixed capacity.

    For each (batch, class) of ``scores`` (B, C, N) over ``boxes`` (B, N, 4): the boxes
    scoring over ``score_threshold`` (all when None; -inf counts as the lowest finite
    score) by descending score, the lower index first on ties, each kept unless a box kept
    before it overlaps it with IoU over ``iou_threshold``, at most K =
    ``min(max_output_boxes_per_class, N)``. Returns the int64 ``(B * C * K, 3)`` table of
    their ``[batch, class, box]`` rows in (batch, class, rank) order, then rows of -1, and
    their number as an int64 ``(1,)``.

    >>> boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], np.float32)
    >>> rows, count = non_max_suppression(boxes, np.array([[[0.9, 0.8, 0.7]]], np.float32),
    ...                                   3, 0.5)
    >>> rows[:count[0]].tolist()
    [[0, 0, 0], [0, 0, 2]]
    """
    batches, n = boxes.shape[:2]
    classes = scores.shape[1]
    k = max(min(int(max_output_boxes_per_class), n), 0)
    corners = _corners(boxes.astype(np.float32), bool(center_point_box))
    threshold = np.float32(iou_threshold)
    rows = np.full((batches * classes * k, 3), -1, np.int64)
    count = 0
    for b in range(batches):
        for c in range(classes):
            score = np.maximum(scores[b, c].astype(np.float32), np.finfo(np.float32).min)
            order = np.arange(n) if score_threshold is None else np.flatnonzero(
                score > np.float32(score_threshold))
            order = order[np.argsort(-score[order], kind="stable")]
            kept: list[int] = []
            for box in order:
                if len(kept) == k:
                    break
                if not _suppressed(corners[b, kept], corners[b, box], threshold):
                    kept.append(int(box))
            rows[count:count + len(kept)] = [[b, c, box] for box in kept] if kept else -1
            count += len(kept)
    return rows, np.array([count], np.int64)
