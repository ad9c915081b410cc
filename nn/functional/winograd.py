"""Winograd F(m x m, 3x3), m = ``tile`` = 2 or 4: a 3x3 stride-1 conv as transforms around
a per-tile product.

An m x m output tile comes from an a x a input tile ``d`` (a = m + 2) as
``A^T [(G g G^T) * (B^T d B)] A``: a^2 multiplies per (input, output) channel pair instead
of 9 m^2 (16 against 36 for m = 2, 36 against 144 for m = 4), the transforms being adds and
multiplies by small constants (F(4x4)'s larger ones round more). ``winograd_input`` and
``winograd_output`` are the two transforms; between them, a grouped 1x1 conv (a^2 groups, one
per position of the tile) with the weight of ``winograd_weight`` multiplies the transformed
tiles (``modelc.passes.winograd_convs``).

Layout: tile ``t = n * TH * TW + i * TW + j`` of image ``n``; the transformed input is
(1, a^2 * C, 1, N * TH * TW), channel ``k * C + c`` holding position ``k = a * r + s`` of
channel ``c``'s transformed tile, so every position is a contiguous plane over the tiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dispatch import primitive

__all__ = ["tile_starts", "winograd_input", "winograd_output", "winograd_weight"]

# (B^T, G, A^T) by output tile m (Lavin and Gray's F(2x2, 3x3) and F(4x4, 3x3))
MATRICES = {
    2: (np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64),
        np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64),
        np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)),
    4: (np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                  [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64),
        np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                  [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float64),
        np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0],
                  [0, 1, -1, 8, -8, 1]], np.float64)),
}


def _matrices(tile: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if tile not in MATRICES:
        raise ValueError(f"winograd: expected an output tile in {sorted(MATRICES)}, got {tile!r}")
    return MATRICES[tile]


def winograd_weight(weight: np.ndarray, tile: int = 2) -> np.ndarray:
    """(O, C, 3, 3) -> the grouped 1x1 weight (a^2 * O, C, 1, 1), a = ``tile`` + 2:
    ``G g G^T`` per channel pair, group ``k = a * r + s`` holding position (r, s).
    Computed in float64.

    >>> winograd_weight(np.ones((2, 3, 3, 3), np.float32)).shape
    (32, 3, 1, 1)
    >>> winograd_weight(np.ones((2, 3, 3, 3), np.float32), 4).shape
    (72, 3, 1, 1)
    """
    o, c, kh, kw = weight.shape
    if (kh, kw) != (3, 3):
        raise ValueError(f"winograd_weight: expected a (O, C, 3, 3) weight, got {weight.shape}")
    g = _matrices(tile)[1]
    u = np.einsum("rk,ockl,sl->rsoc", g, np.asarray(weight, np.float64), g)
    return u.reshape(len(g) ** 2 * o, c, 1, 1).astype(np.float32)


def tile_starts(length: int, tile: int = 2, dilation: int = 1) -> np.ndarray:
    """The first output index of each tile along an axis of ``length`` outputs: tile ``j``
    covers ``start + dilation * k`` (k < ``tile``), the ``dilation`` tiles of a block of
    ``tile * dilation`` outputs interleaved (``(j // dilation) * tile * dilation + j %
    dilation``); the tiles starting inside the axis, which they cover once.

    >>> tile_starts(5).tolist()
    [0, 2, 4]
    >>> tile_starts(10, 2, 3).tolist()
    [0, 1, 2, 6, 7, 8]
    """
    starts = _starts(-(-int(length) // (tile * dilation)) * dilation, tile, dilation)
    return starts[starts < length]


def _starts(tiles: int, tile: int, dilation: int) -> np.ndarray:
    j = np.arange(tiles)
    return (j // dilation) * tile * dilation + j % dilation


@primitive
def winograd_input(input: np.ndarray, padding: Any = (0, 0), tiles: Any = None,
                   count: int | None = None, tile: int = 2, dilation: int = 1) -> np.ndarray:
    """(N, C, H, W) -> the transformed tiles (1, a^2 * C, 1, COUNT), a = ``tile`` + 2:
    ``B^T d B`` of each a x a tile ``d`` (stride ``tile``) of the input zero-padded by
    ``padding`` = (top, left) rows and columns before it and by as many after it as the
    ``tiles`` = (TH, TW) reach (default: the tiles that fit in the input and its top and left
    padding); ``count`` (default
    N * TH * TW) may add zero columns after the tiles (the kernel leaves them unwritten).
    With ``dilation`` > 1 (a dilated 3x3 conv) a tile's inputs are ``dilation`` apart and
    the tiles start at ``tile_starts`` (default tiles: those starting inside the input).

    Raises:
        ValueError: not 4-D, negative padding, or no tile.

    >>> winograd_input(np.ones((2, 3, 4, 6), np.float32)).shape
    (1, 48, 1, 4)
    >>> winograd_input(np.ones((1, 3, 5, 5), np.float32), (1, 1), (3, 3)).shape
    (1, 48, 1, 9)
    >>> winograd_input(np.ones((1, 3, 5, 5), np.float32), (1, 1), (2, 2), tile=4).shape
    (1, 108, 1, 4)
    """
    b_t = _matrices(tile)[0]
    m, a = tile, tile + 2
    top, left = (int(p) for p in padding)
    if input.ndim != 4 or min(top, left) < 0:
        raise ValueError(f"winograd_input: expected (N, C, H, W) and padding (top, left) >= 0, "
                         f"got {input.shape} and {padding}")
    n, c, h, w = input.shape
    dil = int(dilation)
    if tiles is None:
        tiles = ((h + top - 2) // m, (w + left - 2) // m) if dil == 1 else (
            len(tile_starts(h, m, dil)), len(tile_starts(w, m, dil)))
    th, tw = tiles
    if min(th, tw) < 1 or dil < 1:
        raise ValueError(f"winograd_input: no 4x4 tile in {input.shape} padded by {padding}")
    count = n * th * tw if count is None else int(count)
    if count < n * th * tw:
        raise ValueError(f"winograd_input: count {count} is under the {n * th * tw} tiles")
    rows, cols = (_starts(t, m, dil)[:, None] + dil * np.arange(a) for t in (th, tw))
    padded = np.zeros((n, c, max(rows.max() + 1, top + h), max(cols.max() + 1, left + w)),
                      np.float64)
    padded[:, :, top:top + h, left:left + w] = input
    d = padded[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # (N, C, TH, TW, a, a)
    v = np.einsum("ar,ncijrs,bs->abcnij", b_t, d, b_t).reshape(a * a * c, n * th * tw)
    out = np.zeros((1, a * a * c, 1, count), input.dtype)
    out[0, :, 0, :n * th * tw] = v
    return out


@primitive
def winograd_output(input: np.ndarray, bias: np.ndarray | None = None, batch: int = 1,
                    size: Any = (2, 2), tile: int = 2, dilation: int = 1) -> np.ndarray:
    """The per-tile products (1, a^2 * O, 1, COUNT) -> (N, O, OH, OW), a = ``tile`` + 2,
    ``size`` = (OH, OW): ``A^T m A`` of each tile, cropped to ``size``, plus ``bias`` (O,) if
    given; the columns past the N * TH * TW tiles are ignored. With ``dilation`` > 1 a
    tile's outputs are ``dilation`` apart, the tiles at ``tile_starts``.

    Raises:
        ValueError: a shape that does not hold ``batch`` images of 16 positions of ``size``.

    >>> winograd_output(np.ones((1, 32, 1, 4), np.float32), batch=2, size=(2, 3)).shape
    (2, 2, 2, 3)
    """
    a_t = _matrices(tile)[2]
    oh, ow = size
    dil = int(dilation)
    a, (th, tw) = tile + 2, (len(tile_starts(size_, tile, dil)) for size_ in (oh, ow))
    if input.ndim != 4 or input.shape[1] % (a * a) or input.shape[3] < batch * th * tw:
        raise ValueError(f"winograd_output: expected (1, {a * a} * O, 1, >= {batch * th * tw}) "
                         f"for {batch} images of {oh}x{ow}, got {input.shape}")
    o = input.shape[1] // (a * a)
    m = input[..., :batch * th * tw].reshape(a, a, o, batch, th, tw).astype(np.float64)
    tiles = np.einsum("ar,rsonij,bs->noiajb", a_t, m, a_t)  # (N, O, TH, m, TW, m)
    rows, cols = (_starts(t, tile, dil)[:, None] + dil * np.arange(tile) for t in (th, tw))
    y = np.zeros((batch, o, rows.max() + 1, cols.max() + 1), np.float64)
    y[:, :, rows[:, :, None, None], cols[None, None, :, :]] = tiles
    y = y[:, :, :oh, :ow]
    if bias is not None:
        y = y + np.asarray(bias, np.float64).reshape(1, -1, 1, 1)
    return y.astype(input.dtype)
