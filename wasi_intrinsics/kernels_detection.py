"""The host provider's detection family: ``f32_non_max_suppression`` with numpy.

It takes the classic formulation (take the best candidate left, drop every candidate it
suppresses, repeat), where the wasm kernel and ``nn.functional`` test each candidate in
score order against the boxes kept so far: the two orders select the same boxes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from wasm_kernels import abi

from .intrinsic import HostContext
from .kernel_operands import operand

_I64 = np.dtype("<i8")
_F32 = np.dtype("<f4")


def _corners(boxes: np.ndarray, center: int) -> tuple[np.ndarray, ...]:
    """Low and high first coordinates, low and high second ones, and areas."""
    a, c, d, e = boxes.T
    if center:
        sides = a - d * 0.5, a + d * 0.5, c - e * 0.5, c + e * 0.5
    else:
        sides = np.minimum(a, d), np.maximum(a, d), np.minimum(c, e), np.maximum(c, e)
    return (*sides, (sides[1] - sides[0]) * (sides[3] - sides[2]))


def _select(corners: tuple[np.ndarray, ...], score: np.ndarray, k: int, iou: np.float32,
            floor: np.float32 | None) -> list[int]:
    """The boxes one (batch, class) keeps, best first."""
    low_a, high_a, low_c, high_c, area = corners
    score = np.maximum(score, np.finfo(np.float32).min)
    left = np.ones(len(score), bool) if floor is None else score > floor
    kept: list[int] = []
    while len(kept) < k and left.any():
        candidates = np.flatnonzero(left)
        best = int(candidates[np.argmax(score[candidates])])  # the first of equal maxima
        kept.append(best)
        across_a = np.minimum(high_a[best], high_a) - np.maximum(low_a[best], low_a)
        across_c = np.minimum(high_c[best], high_c) - np.maximum(low_c[best], low_c)
        overlap = np.maximum(across_a, 0) * np.maximum(across_c, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = overlap / ((area + area[best]) - overlap)
        left &= ~((overlap > 0) & (ratio > iou))
        left[best] = False
    return kept


def _nms(spec: abi.KernelSpec) -> Callable[..., None]:
    def nms(ctx: HostContext, boxes: int, scores: int, selected: int, count: int, scratch: int,
            batches: int, classes: int, n: int, k: int, center: int, floored: int, iou: float,
            floor: float) -> None:
        box = operand(ctx.memory, boxes, (batches, n, 4), _F32)
        score = operand(ctx.memory, scores, (batches, classes, n), _F32)
        rows = operand(ctx.memory, selected, (batches * classes * k, 3), _I64)
        lists = [[b, c, kept] for b in range(batches) for corners in [_corners(box[b], center)]
                 for c in range(classes) for kept in _select(
                     corners, score[b, c], k, np.float32(iou),
                     np.float32(floor) if floored else None)]
        rows[...] = -1
        rows[:len(lists)] = np.array(lists, np.int64).reshape(-1, 3)
        operand(ctx.memory, count, (1,), _I64)[0] = len(lists)

    return nms


FAMILIES: dict[str, Callable[[abi.KernelSpec], Callable[..., None]]] = {"nms": _nms}
