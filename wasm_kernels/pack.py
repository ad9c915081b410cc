"""The packed weight layouts of the ``f32_linear`` and ``f32_conv_transpose2d`` kernels, and
their inverses (numpy only).

``nn.Linear``'s weight W is (n, k). Packed, its rows come in panels of ``PANEL`` rows (the
last one padded with zero rows), each ``PANEL * k`` floats long and starting at float ``j *
k`` for its first row ``j``, so a kernel finds row ``j``'s panel where row ``j`` of W itself
would start. Inside a panel the ``PANEL`` weights of one step of k are adjacent, ``[kk *
PANEL + v] = W[j + v, kk]``: one step of the 4x8 outer-product tile reads its two registers
of W at one pointer, which moves on by ``PANEL`` floats per step.

    >>> import numpy as np
    >>> w = np.arange(30, dtype=np.float32).reshape(5, 6)
    >>> packed = pack_linear_weight(w)
    >>> packed[:8].tolist()
    [0.0, 6.0, 12.0, 18.0, 24.0, 0.0, 0.0, 0.0]
    >>> bool((unpack_linear_weight(packed, 5, 6) == w).all())
    True
"""

from __future__ import annotations

import numpy as np

PANEL = 8
"""Rows of W per panel: the column width of the linear micro-kernel's tile."""


def packed_linear_floats(n: int, k: int) -> int:
    """The length of ``pack_linear_weight``'s array for a weight (n, k)."""
    return -(-n // PANEL) * PANEL * k


def pack_linear_weight(w: np.ndarray) -> np.ndarray:
    """W (n, k) as the flat float32 array the ``f32_linear`` kernels read.

    Raises:
        ValueError: ``w`` is not two-dimensional.
    """
    if w.ndim != 2:
        raise ValueError(f"expected a weight of shape (n, k), got shape {w.shape}")
    n, k = w.shape
    panels = -(-n // PANEL)
    padded = np.zeros((panels * PANEL, k), np.float32)
    padded[:n] = w
    # (panels, PANEL, k) -> (panels, k, PANEL)
    return np.ascontiguousarray(padded.reshape(panels, PANEL, k).transpose(0, 2, 1)).ravel()


def unpack_linear_weight(packed: np.ndarray, n: int, k: int) -> np.ndarray:
    """The (n, k) weight that ``pack_linear_weight`` packed into ``packed``."""
    panels = -(-n // PANEL)
    split = packed[:packed_linear_floats(n, k)].reshape(panels, k, PANEL)
    return split.transpose(0, 2, 1).reshape(panels * PANEL, k)[:n]


def pack_conv_transpose_weight(w: np.ndarray, groups: int) -> np.ndarray:
    """torch's conv_transpose2d weight (c, o / groups, kh, kw) as the (groups, c / groups, kh,
    kw, o / groups) float32 array ``f32_conv_transpose2d`` reads: the output channels of one
    tap adjacent, so a tile of them is one pointer and immediate offsets.

    Raises:
        ValueError: ``w`` is not four-dimensional or ``groups`` does not divide its channels.

    >>> w = np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2)
    >>> pack_conv_transpose_weight(w, 1)[0, 0, 0].tolist()
    [[0.0, 4.0], [1.0, 5.0]]
    """
    if w.ndim != 4 or groups < 1 or w.shape[0] % groups:
        raise ValueError(f"expected a weight (c, o / groups, kh, kw) with c divisible by "
                         f"groups={groups}, got shape {w.shape}")
    c, og, kh, kw = w.shape
    grouped = np.asarray(w, np.float32).reshape(groups, c // groups, og, kh, kw)
    return np.ascontiguousarray(grouped.transpose(0, 1, 3, 4, 2))


def unpack_conv_transpose_weight(packed: np.ndarray) -> np.ndarray:
    """The (c, o / groups, kh, kw) weight that ``pack_conv_transpose_weight`` packed into the
    (groups, c / groups, kh, kw, o / groups) array ``packed``."""
    groups, cg, kh, kw, og = packed.shape
    return packed.transpose(0, 1, 4, 2, 3).reshape(groups * cg, og, kh, kw)


CONV_BLOCK = 4
"""Output channels per block of a packed conv weight: the rows of the conv's widest tile."""


def pack_conv_weight(w: np.ndarray, groups: int) -> np.ndarray:
    """A conv weight (o, c / groups, kh, kw) as the flat float32 array the ``f32_conv2d``
    kernels read: per group, its ``o / groups`` output channels in blocks of ``CONV_BLOCK``
    (the last block padded with zero channels), each block (kh, kw, c / groups, CONV_BLOCK),
    so the weights of one block at one tap and input channel are adjacent.

        >>> w = np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2)
        >>> pack_conv_weight(w, 1).reshape(4, 4).tolist()[1]
        [1.0, 5.0, 0.0, 0.0]

    Raises:
        ValueError: ``w`` is not four-dimensional, or its channels do not split into
            ``groups``.
    """
    if w.ndim != 4:
        raise ValueError(f"expected a conv weight of shape (o, c / groups, kh, kw), got shape "
                         f"{w.shape}")
    o, cg, kh, kw = w.shape
    if groups < 1 or o % groups:
        raise ValueError(f"a conv weight with {o} output channels does not split into "
                         f"groups={groups}")
    og = o // groups
    blocks = -(-og // CONV_BLOCK)
    padded = np.zeros((groups, blocks * CONV_BLOCK, cg, kh, kw), np.float32)
    padded[:, :og] = np.asarray(w, np.float32).reshape(groups, og, cg, kh, kw)
    # (groups, blocks, CONV_BLOCK, cg, kh, kw) -> (groups, blocks, kh, kw, cg, CONV_BLOCK)
    split = padded.reshape(groups, blocks, CONV_BLOCK, cg, kh, kw)
    return np.ascontiguousarray(split.transpose(0, 1, 4, 5, 3, 2)).ravel()


def packed_conv_floats(o: int, cg: int, kh: int, kw: int, groups: int) -> int:
    """The length of ``pack_conv_weight``'s array for a weight (o, cg, kh, kw) in ``groups``."""
    return groups * -(-(o // groups) // CONV_BLOCK) * CONV_BLOCK * cg * kh * kw


def unpack_conv_weight(packed: np.ndarray, o: int, cg: int, kh: int, kw: int,
                       groups: int) -> np.ndarray:
    """The (o, cg, kh, kw) weight that ``pack_conv_weight`` packed into ``packed``."""
    og = o // groups
    blocks = -(-og // CONV_BLOCK)
    split = packed[:packed_conv_floats(o, cg, kh, kw, groups)].reshape(
        groups, blocks, kh, kw, cg, CONV_BLOCK)
    padded = split.transpose(0, 1, 5, 4, 2, 3).reshape(groups, blocks * CONV_BLOCK, cg, kh, kw)
    return padded[:, :og].reshape(o, cg, kh, kw)
