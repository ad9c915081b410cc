"""ONNX DeformConv (opset 19, 2-D): each kernel tap reads the input at its place in the
window moved by a learned offset, bilinearly (zeros outside), times an optional mask; then
the taps are a 1x1 convolution.

For every tap (and offset group) the moved points are a sampling grid, so each tap is one
``grid_sample`` (bilinear, zeros padding, ``align_corners``: grid coordinates are pixel
centres, as onnx's reference computes it); the sampled taps, stacked per channel as
``(C * kh * kw)`` channels, meet the weight as a grouped 1x1 ``conv2d``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from .node import OnnxNode


def deform_conv(n: OnnxNode) -> Any:
    """DeformConv: X (N, C, H, W), W (oc, C / group, kh, kw), offset (N, offset_group * kh *
    kw * 2, oh, ow), optional B (oc,) and mask (N, offset_group * kh * kw, oh, ow)."""
    x, weight, offset = n.input(0), n.known(1, "W"), n.input(2)
    bias, mask = n.optional(3), n.optional(4)
    if len(x.shape) != 4 or not all(isinstance(d, int) for d in (*x.shape, *offset.shape)):
        raise n.error(f"expects a 4-D X and offsets of fixed shapes, got {list(x.shape)} and "
                      f"{list(offset.shape)}")
    batch, channels, height, width = x.shape
    out_c, _, kh, kw = weight.shape
    out_h, out_w = offset.shape[2:]
    groups, offset_groups = int(n.attr("group", 1)), int(n.attr("offset_group", 1))
    stride_h, stride_w = n.attr("strides", [1, 1])
    dilation_h, dilation_w = n.attr("dilations", [1, 1])
    pads = n.attr("pads", [0, 0, 0, 0])
    if height < 2 or width < 2 or channels % offset_groups:
        raise n.error(f"expects H and W of at least 2 and channels {channels} divisible by "
                      f"offset_group {offset_groups}")
    per_group = channels // offset_groups
    rows = (np.arange(out_h, dtype=np.float32) * stride_h - pads[0]).reshape(1, 1, out_h, 1)
    cols = (np.arange(out_w, dtype=np.float32) * stride_w - pads[1]).reshape(1, 1, 1, out_w)
    taps = []
    for a in range(kh):
        for b in range(kw):
            sampled = []
            for g in range(offset_groups):
                k = (g * kh + a) * kw + b
                y = F.add(F.slice(offset, 1, 2 * k, 2 * k + 1), rows + np.float32(a * dilation_h))
                x_at = F.add(F.slice(offset, 1, 2 * k + 1, 2 * k + 2),
                             cols + np.float32(b * dilation_w))
                # (N, oh, ow, 2): x then y, in [-1, 1] from the first pixel centre to the last
                grid = F.concat([F.reshape(F.sub(F.mul(x_at, 2.0 / (width - 1)), 1.0),
                                           (batch, out_h, out_w, 1)),
                                 F.reshape(F.sub(F.mul(y, 2.0 / (height - 1)), 1.0),
                                           (batch, out_h, out_w, 1))], dim=3)
                part = x if offset_groups == 1 else F.slice(x, 1, g * per_group,
                                                            (g + 1) * per_group)
                values = F.grid_sample(part, grid, "bilinear", "zeros", True)
                if mask is not None:
                    values = F.mul(values, F.slice(mask, 1, k, k + 1))
                sampled.append(values)
            tap = sampled[0] if offset_groups == 1 else F.concat(sampled, dim=1)
            taps.append(F.reshape(tap, (batch, channels, 1, out_h * out_w)))
    columns = F.reshape(F.concat(taps, dim=2), (batch, channels * kh * kw, out_h, out_w))
    kernel = weight.reshape(out_c, -1, 1, 1).astype(np.float32)
    return F.conv2d(columns, kernel, bias, groups=groups)


OPS = {"DeformConv": deform_conv}
