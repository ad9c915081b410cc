"""Winograd F(2x2, 3x3): a 3x3 stride-1 conv as transforms around a per-tile product.

A 2x2 output tile comes from a 4x4 input tile ``d`` as ``A^T [(G g G^T) * (B^T d B)] A``:
16 multiplies per (input, output) channel pair instead of 36, the transforms being adds.
``winograd_input`` and ``winograd_output`` are the two transforms; between them, a grouped
1x1 conv (16 groups, one per position of the 4x4 tile) with the weight of
``winograd_weight`` multiplies the transformed tiles (``modelc.passes.winograd_convs``).

Layout: tile ``t = n * TH * TW + i * TW + j`` of image ``n``; the transformed input is
(1, 16 * C, 1, N * TH * TW), channel ``k * C + c`` holding position ``k = 4 * r + s`` of
channel ``c``'s transformed tile, so every position is a contiguous plane over the tiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dispatch import primitive

__all__ = ["winograd_input", "winograd_output", "winograd_weight"]

B_T = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64)
A_T = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)


def winograd_weight(weight: np.ndarray) -> np.ndarray:
    """(O, C, 3, 3) -> the grouped 1x1 weight (16 * O, C, 1, 1): ``G g G^T`` per channel
    pair, group ``k = 4 * r + s`` holding position (r, s). Computed in float64.

    >>> winograd_weight(np.ones((2, 3, 3, 3), np.float32)).shape
    (32, 3, 1, 1)
    """
    o, c, kh, kw = weight.shape
    if (kh, kw) != (3, 3):
        raise ValueError(f"winograd_weight: expected a (O, C, 3, 3) weight, got {weight.shape}")
    u = np.einsum("rk,ockl,sl->rsoc", G, np.asarray(weight, np.float64), G)
    return u.reshape(16 * o, c, 1, 1).astype(np.float32)


@primitive
def winograd_input(input: np.ndarray, padding: Any = (0, 0), tiles: Any = None,
                   count: int | None = None) -> np.ndarray:
    """(N, C, H, W) -> the transformed tiles (1, 16 * C, 1, COUNT): ``B^T d B`` of each
    4x4 tile ``d`` (stride 2) of the input zero-padded by ``padding`` = (top, left) rows and
    columns before it and by as many after it as the ``tiles`` = (TH, TW) reach (default:
    the tiles that fit in the input and its top and left padding); ``count`` (default
    N * TH * TW) may add zero columns after the tiles (the kernel leaves them unwritten).

    Raises:
        ValueError: not 4-D, negative padding, or no tile.

    >>> winograd_input(np.ones((2, 3, 4, 6), np.float32)).shape
    (1, 48, 1, 4)
    >>> winograd_input(np.ones((1, 3, 5, 5), np.float32), (1, 1), (3, 3)).shape
    (1, 48, 1, 9)
    """
    top, left = (int(p) for p in padding)
    if input.ndim != 4 or min(top, left) < 0:
        raise ValueError(f"winograd_input: expected (N, C, H, W) and padding (top, left) >= 0, "
                         f"got {input.shape} and {padding}")
    n, c, h, w = input.shape
    th, tw = ((h + top - 2) // 2, (w + left - 2) // 2) if tiles is None else tiles
    if min(th, tw) < 1:
        raise ValueError(f"winograd_input: no 4x4 tile in {input.shape} padded by {padding}")
    count = n * th * tw if count is None else int(count)
    if count < n * th * tw:
        raise ValueError(f"winograd_input: count {count} is under the {n * th * tw} tiles")
    padded = np.zeros((n, c, max(2 * th + 2, top + h), max(2 * tw + 2, left + w)), np.float64)
    padded[:, :, top:top + h, left:left + w] = input  # (N, C, 2 TH + 2.., 2 TW + 2..)
    rows = np.arange(th)[:, None] * 2 + np.arange(4)  # (TH, 4)
    cols = np.arange(tw)[:, None] * 2 + np.arange(4)  # (TW, 4)
    d = padded[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # (N, C, TH, TW, 4, 4)
    v = np.einsum("ar,ncijrs,bs->abcnij", B_T, d, B_T).reshape(16 * c, n * th * tw)
    out = np.zeros((1, 16 * c, 1, count), input.dtype)
    out[0, :, 0, :n * th * tw] = v
    return out


@primitive
def winograd_output(input: np.ndarray, bias: np.ndarray | None = None, batch: int = 1,
                    size: Any = (2, 2)) -> np.ndarray:
    """The per-tile products (1, 16 * O, 1, COUNT) -> (N, O, OH, OW), ``size`` = (OH, OW):
    ``A^T m A`` of each tile, cropped to ``size``, plus ``bias`` (O,) if given; the columns
    past the N * TH * TW tiles are ignored.

    Raises:
        ValueError: a shape that does not hold ``batch`` images of 16 positions of ``size``.

    >>> winograd_output(np.ones((1, 32, 1, 4), np.float32), batch=2, size=(2, 3)).shape
    (2, 2, 2, 3)
    """
    oh, ow = size
    th, tw = -(-oh // 2), -(-ow // 2)
    if input.ndim != 4 or input.shape[1] % 16 or input.shape[3] < batch * th * tw:
        raise ValueError(f"winograd_output: expected (1, 16 * O, 1, >= {batch * th * tw}) "
                         f"for {batch} images of {oh}x{ow}, got {input.shape}")
    o = input.shape[1] // 16
    m = input[..., :batch * th * tw].reshape(4, 4, o, batch, th, tw).astype(np.float64)
    y = np.einsum("ar,rsonij,bs->noiajb", A_T, m, A_T).reshape(batch, o, 2 * th, 2 * tw)
    y = y[:, :, :oh, :ow]
    if bias is not None:
        y = y + np.asarray(bias, np.float64).reshape(1, -1, 1, 1)
    return y.astype(input.dtype)
