"""ONNX RoiAlign (opsets 10 and 16) with a fixed ``sampling_ratio``, as onnx's reference and
onnxruntime compute it: each output bin averages (or takes the largest of) its
``sampling_ratio**2`` bilinear samples, each sample four weighted reads.

The input is viewed as a table of rows, one per (batch, y, x), each its channels; the rows of
every sample's four corners are one gather (``embedding``) each. Points more than one pixel
outside the input read nothing (their weights are 0); nearer ones are clamped to it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from .node import OnnxNode


def _axis_samples(start: Any, end: Any, bins: int, ratio: int, size: int, half_pixel: bool
                  ) -> tuple[list[tuple[Any, Any]], Any]:
    """Along one axis, for the (R, bins, ratio) sample points of every roi: the two corner
    positions (float32 integers) with their weights, and where the point is inside."""
    span = F.sub(end, start)
    if not half_pixel:
        span = F.maximum(span, 1.0)
    width = F.div(span, float(bins))  # (R, 1, 1)
    steps = np.arange(bins, dtype=np.float32).reshape(1, bins, 1)
    offsets = (np.arange(ratio, dtype=np.float32) + np.float32(0.5)).reshape(1, 1, ratio)
    point = F.add(F.add(start, F.mul(steps, width)), F.div(F.mul(offsets, width), float(ratio)))
    inside = F.where(F.lt(point, -1.0), False, F.le(point, float(size)))
    point = F.maximum(point, 0.0)
    low = F.floor(point)
    last = F.ge(low, float(size - 1))
    low = F.where(last, float(size - 1), low)
    point = F.where(last, low, point)
    high = F.where(last, low, F.add(low, 1.0))
    fraction = F.sub(point, low)
    return [(low, F.sub(1.0, fraction)), (high, fraction)], inside


def roi_align(n: OnnxNode) -> Any:
    """RoiAlign: X (N, C, H, W), rois (R, 4) as (x1, y1, x2, y2), batch_indices (R,) ->
    (R, C, output_height, output_width)."""
    x, rois, batches = n.input(0), n.input(1), n.input(2)
    ratio = int(n.attr("sampling_ratio", 0))
    if ratio <= 0:
        raise n.error("sampling_ratio 0 (adaptive: samples per bin from each roi's size, "
                      "known only at run time) is not supported; give a positive one")
    if x.dtype != np.float32 or not all(isinstance(d, int) for d in (*x.shape, *rois.shape)):
        raise n.error(f"expects float32 X and rois of fixed shapes, got {x.dtype} "
                      f"{list(x.shape)} and {list(rois.shape)}")
    _, channels, height, width = x.shape
    count = rois.shape[0]
    out_h, out_w = int(n.attr("output_height", 1)), int(n.attr("output_width", 1))
    mode = n.attr("coordinate_transformation_mode",
                  "half_pixel" if n.opset >= 16 else "output_half_pixel")
    half_pixel = mode == "half_pixel"
    scaled = F.mul(rois, float(n.attr("spatial_scale", 1.0)))
    if half_pixel:
        scaled = F.sub(scaled, 0.5)
    corner = [F.reshape(F.slice(scaled, 1, k, k + 1), (count, 1, 1)) for k in range(4)]
    ys, inside_y = _axis_samples(corner[1], corner[3], out_h, ratio, height, half_pixel)
    xs, inside_x = _axis_samples(corner[0], corner[2], out_w, ratio, width, half_pixel)
    # (R, out_h * ratio, 1) and (R, 1, out_w * ratio): the sample grid of every roi
    shape_y, shape_x = (count, out_h * ratio, 1), (count, 1, out_w * ratio)
    inside = F.mul(F.cast(F.reshape(inside_y, shape_y), np.float32),
                   F.cast(F.reshape(inside_x, shape_x), np.float32))
    base = F.reshape(F.mul(F.cast(batches, np.int64), height * width), (count, 1, 1))
    table = F.reshape(F.permute(x, [0, 2, 3, 1]), (-1, channels))  # (N * H * W, C)
    samples = count * out_h * ratio * out_w * ratio
    terms = []
    for y, weight_y in ys:
        for x_at, weight_x in xs:
            row = F.add(F.add(base, F.mul(F.cast(F.reshape(y, shape_y), np.int64), width)),
                        F.cast(F.reshape(x_at, shape_x), np.int64))
            weight = F.mul(F.mul(F.reshape(weight_y, shape_y), F.reshape(weight_x, shape_x)),
                           inside)
            values = F.embedding(F.reshape(row, (samples,)), table)  # (samples, C)
            terms.append(F.mul(values, F.reshape(weight, (samples, 1))))
    average = n.attr("mode", "avg") == "avg"
    if average:
        merged = F.add(F.add(terms[0], terms[1]), F.add(terms[2], terms[3]))
    else:
        merged = F.maximum(F.maximum(terms[0], terms[1]), F.maximum(terms[2], terms[3]))
    pool = F.sum if average else F.amax
    # (R, out_h, ratio, out_w, ratio, C): pooled over the first ratio, then the second
    rows = pool(F.reshape(merged, (count * out_h, ratio, out_w * ratio * channels)), dim=1)
    pooled = pool(F.reshape(rows, (count * out_h * out_w, ratio, channels)), dim=1)
    if average:
        pooled = F.div(pooled, float(ratio * ratio))
    return F.permute(F.reshape(pooled, (count, out_h, out_w, channels)), [0, 3, 1, 2])


OPS = {"RoiAlign": roi_align}
