"""ONNX NonMaxSuppression: greedy selection as a wasm loop (``nn.functional.loop``).

Each of at most ``min(max_output_boxes_per_class, boxes)`` steps takes, in every (batch,
class) at once, the best-scoring box still a candidate (the lowest index on ties), and
drops from the candidates it and every box whose IoU with it is over the threshold, as
onnxruntime and onnx's reference do; the loop ends early once no class has a candidate.
The selected ``[batch, class, box]`` rows are then moved to the front of a fixed-capacity
``(batches * classes * steps, 3)`` tensor (the rest are -1) and counted.

How many rows are selected is known only at run time, so the result is a ``RowCounted``
(``row_counted``): ops that keep rows as rows may read it, and as a graph output the runtime
returns its first ``count`` rows, with the count beside it as output ``<name>.count``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from ..ops.loop import Body
from .fold import is_known
from .node import OnnxNode
from .row_counted import RowCounted


def _corners(boxes: Any, center: bool) -> list[Any]:
    """``[a_min, a_max, c_min, c_max, area]`` of each box, each (B, N, 1): flipped corners
    put in order, or centre-size boxes (``center_point_box=1``) turned into corners."""
    b = [F.slice(boxes, 2, k, k + 1) for k in range(4)]
    if center:
        half_a, half_c = F.mul(b[2], 0.5), F.mul(b[3], 0.5)
        low_a, high_a = F.sub(b[0], half_a), F.add(b[0], half_a)
        low_c, high_c = F.sub(b[1], half_c), F.add(b[1], half_c)
    else:
        low_a, high_a = F.minimum(b[0], b[2]), F.maximum(b[0], b[2])
        low_c, high_c = F.minimum(b[1], b[3]), F.maximum(b[1], b[3])
    area = F.mul(F.sub(high_a, low_a), F.sub(high_c, low_c))
    return [low_a, high_a, low_c, high_c, area]


def _step(batches: int, classes: int, boxes: int, steps: int, threshold: float
          ) -> Callable[..., Any]:
    """One greedy step: ``(i, [scores, picked, left], [], [table, *planes]) -> ([scores,
    picked, left], [])``; ``scores`` (B, C, N) are the boxes' scores, -inf once out of
    play, row i of ``picked`` (K, B, C, 1) gets the box taken (-1 when none is left), and
    ``left`` (a bool) says whether any box is still in play (the loop stops when none is)."""
    positions = np.arange(boxes, dtype=np.int64)
    offsets = (np.arange(batches, dtype=np.int64) * boxes).reshape(batches, 1, 1)
    rows_of_picked = np.arange(steps, dtype=np.int64).reshape(steps, 1, 1, 1)

    def step(i: Any, states: list[Any], elements: list[Any], outer: list[Any]) -> Any:
        scores, picked_so_far, _ = states
        table, *planes = outer
        best = F.argmax(scores, dim=-1, keepdim=True)  # (B, C, 1)
        some = F.gt(F.amax(scores, dim=-1, keepdim=True), -np.inf)
        rows = F.reshape(F.add(best, offsets), (batches * classes,))
        picked = F.reshape(F.embedding(rows, table), (batches, classes, 5))
        low_a, high_a, low_c, high_c, area = (F.slice(picked, 2, k, k + 1) for k in range(5))
        across_a = F.sub(F.minimum(high_a, planes[1]), F.maximum(low_a, planes[0]))
        across_c = F.sub(F.minimum(high_c, planes[3]), F.maximum(low_c, planes[2]))
        overlap = F.mul(F.maximum(across_a, 0.0), F.maximum(across_c, 0.0))
        iou = F.div(overlap, F.sub(F.add(planes[4], area), overlap))
        if threshold < 0:  # NOTE: boxes that do not overlap are never suppressed
            iou = F.where(F.gt(overlap, 0.0), iou, -np.inf)
        kept = F.where(F.gt(iou, threshold), -np.inf, scores)
        kept = F.where(F.eq(positions, best), -np.inf, kept)
        taken = F.where(F.eq(rows_of_picked, i), F.where(some, best, -1), picked_so_far)
        return [kept, taken, F.gt(F.amax(kept), -np.inf)], []
    return step


def _compact(picked: Any, batches: int, classes: int, steps: int) -> tuple[Any, Any]:
    """``picked`` (K, B, C, 1) as ``[batch, class, box]`` rows in (batch, class, step)
    order, the selected ones first (-1 rows after them), and their count (int64, (1,)).

    Each (batch, class) picks boxes until it has none left, so its selection is a prefix
    of its K steps: output row j belongs to the last (batch, class) whose prefixes before
    it hold at most j rows, at step j minus those rows."""
    lists, total = batches * classes, batches * classes * steps
    by_list = F.permute(F.reshape(picked, (steps, lists)), [1, 0])  # (B * C, K)
    counts = F.sum(F.cast(F.ge(by_list, 0), np.float32), dim=1)  # (B * C,)
    before = F.reshape(F.cumsum(counts, 0, exclusive=True), (1, lists))
    j = np.arange(total, dtype=np.float32).reshape(total, 1)
    reached = F.le(before, j)  # (total, B * C)
    owner = F.sub(F.sum(F.cast(reached, np.float32), dim=1, keepdim=True), 1.0)
    start = F.amax(F.where(reached, before, -1.0), dim=1, keepdim=True)
    # NOTE: rows past the count point past the lists' ends: kept in the table, then -1
    source = F.minimum(F.add(F.mul(owner, float(steps)), F.sub(j, start)), float(total - 1))
    source = F.cast(source, np.int64)
    boxes = F.embedding(F.reshape(source, (total,)), F.reshape(by_list, (total, 1)))
    batch = F.floor(F.div(F.add(owner, 0.5), float(classes)))
    rows = F.concat([F.cast(batch, np.int64), F.cast(F.sub(owner, F.mul(batch, float(classes))),
                                                    np.int64), boxes], dim=1)
    count = F.sum(counts, dim=0, keepdim=True)
    rows = F.where(F.lt(j, count), rows, -1)
    return rows, F.cast(count, np.int64)


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
    batches, count, _, _, classes, _ = (int(d) for d in shape)
    steps = max(min(limit, count), 0)
    if steps == 0:
        return np.zeros((0, 3), np.int64)
    if boxes.dtype != np.float32 or scores.dtype != np.float32:
        raise n.error(f"expects float32 boxes and scores, got {boxes.dtype} and {scores.dtype}")
    corners = _corners(boxes, bool(n.attr("center_point_box", 0)))
    table = F.reshape(F.concat(corners, dim=2), (batches * count, 5))
    planes = [F.reshape(c, (batches, 1, count)) for c in corners]
    # NOTE: -inf marks a box out of play, so a score of -inf counts as the lowest finite one
    scores = F.maximum(scores, float(np.finfo(np.float32).min))
    if floor is not None:
        scores = F.where(F.gt(scores, floor), scores, -np.inf)
    step = _step(batches, classes, count, steps, threshold)
    outer = [table, *planes]
    states = [scores, np.full((steps, batches, classes, 1), -1, np.int64),
              F.gt(F.amax(scores), -np.inf)]
    if is_known(boxes, scores):
        _, picked, _ = F.loop(steps, states, [], outer, step, until=2)
        rows, total = _compact(picked, batches, classes, steps)
        return rows[:int(total[0])]
    body = Body.trace(step, [(tuple(v.shape), str(v.dtype)) for v in states],
                      outer=[(tuple(v.shape), "float32") for v in outer], counter=True)
    # NOTE: it stops once no box is in play in any class: as many steps as the most boxes
    # one class keeps, not max_output_boxes_per_class
    _, picked, _ = F.loop(steps, states, [], outer, body, until=2)
    rows, total = _compact(picked, batches, classes, steps)
    return RowCounted(rows, F.reshape(total, (1,)), n.name)


OPS = {"NonMaxSuppression": non_max_suppression}
