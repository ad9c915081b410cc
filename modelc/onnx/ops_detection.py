"""ONNX NonMaxSuppression: one ``nn.functional.non_max_suppression`` node, lowered to the
``f32_non_max_suppression`` kernel (per (batch, class): the candidates over the score
threshold in a heap, each kept unless a box kept before it overlaps it too much).

It writes the selected ``[batch, class, box]`` rows in (batch, class, rank) order at the
front of a fixed-capacity ``(batches * classes * K, 3)`` tensor (the rest are -1), K =
``min(max_output_boxes_per_class, boxes)``, and counts them. How many rows are selected is
known only at run time, so the result is a ``RowCounted`` (``row_counted``): ops that keep
rows as rows may read it, and as a graph output the runtime returns its first ``count``
rows, with the count beside it as output ``<name>.count``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from .fold import is_known
from .node import OnnxNode
from .row_counted import RowCounted


def non_max_suppression(n: OnnxNode) -> Any:
    """NonMaxSuppression (opsets 10-11): ``max_output_boxes_per_class``, ``iou_threshold``
    and ``score_threshold`` must be known at import time, the boxes' and scores' shapes
    fixed."""
    boxes, scores = n.input(0), n.input(1)
    limit = int(n.known(2, "max_output_boxes_per_class").reshape(-1)[0]) if n.has(2) else 0
    threshold = float(n.known(3, "iou_threshold").reshape(-1)[0]) if n.has(3) else 0.0
    floor = float(n.known(4, "score_threshold").reshape(-1)[0]) if n.has(4) else None
    shape = (*boxes.shape, *scores.shape)
    if not all(isinstance(d, (int, np.integer)) for d in shape):
        raise n.error(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} must have "
                      "fixed shapes; fix them with input_shapes")
    steps = max(min(limit, int(shape[1])), 0)
    if steps == 0:
        return np.zeros((0, 3), np.int64)
    if boxes.dtype != np.float32 or scores.dtype != np.float32:
        raise n.error(f"expects float32 boxes and scores, got {boxes.dtype} and {scores.dtype}")
    rows, total = F.non_max_suppression(boxes, scores, steps, threshold, floor,
                                        bool(n.attr("center_point_box", 0)))
    if is_known(boxes, scores):
        return rows[:int(total[0])]
    return RowCounted(rows, total, n.name)


OPS = {"NonMaxSuppression": non_max_suppression}
