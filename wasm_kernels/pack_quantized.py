"""Compile-time packing of int8 weights for the integer kernels (``qlinear``).

``pack_qlinear_weight`` lays W (n, k) out in panels of ``QPANEL`` columns; within a panel,
each step of four k holds ``QPANEL`` columns' four weights adjacent (column-major in groups
of four: the 16 bytes of a v128 are four columns by four steps of k, what the dot products
of ``templates/qlinear.py`` sum into one i32 lane per column). k is padded to a multiple of
4 and n to a multiple of ``QPANEL`` with zeros. After the panels come the column sums
``sum_k W[j, k]`` as int32 (n padded), which the kernels use to subtract the activation's
zero point once per column instead of once per product, then one int32 that is 1 when every
column's weights are in ``SEVEN_BIT`` or their negations are (the relaxed module's kernels
then use the relaxed dot product, ``templates/qlinear_tile.py``), else 0, then per panel 32
bytes: each column's 4 bytes 0xFF where that column is used negated, else 0 (a step's layout;
read as int32, each column's -1 or 0).

A ``wide`` packing (the ``qlinear_wide`` rows) stores the panels' weights as int16, each in
its place, so the kernels' k loop loads them without widening them.
"""

from __future__ import annotations

import numpy as np

QPANEL = 8
"""Columns of W per packed panel (two v128 of four columns by four steps of k)."""


SEVEN_BIT = (-64, 63)
"""The weights that plus 64 are 7-bit (the relaxed dot's second operand, exact on every
engine). A column in [-63, 64] (onnxruntime's ``reduce_range`` weights are in [-64, 64]) is
used negated."""

QBLOCK_BYTES = 1 << 19
"""Bytes of A's rows the simd128 qlinear tile widens at a time (``templates/qlinear_pack.py``):
a block that stays in L2 while every column panel of W passes over it."""


def qblock_rows(k: int) -> int:
    """Rows of A per widened block: as many as ``QBLOCK_BYTES`` hold at ``round_up(k, 4) *
    4`` bytes a row, even (the tile's 2 rows), at least 2."""
    return max(2, QBLOCK_BYTES // (_round_up(k, 4) * 4) & ~1)


DIRECT_ROWS = 4
"""Products of fewer rows of A than this (an unrolled recurrent step's one row) skip the
simd128 tile's widened W panels: their tiles widen W as they load it (``v128.load8x8_s``),
where widening a panel into scratch costs as much as one row's product over it; or, when
``packs_wide``, load it packed wide."""

WIDE_MAX_BYTES = 1 << 20
"""The most bytes of wide (int16) panels a weight is packed in: half of this CPU's 2 MB L2.
The one-row product over a wide 1024 x 512 weight (1 MB) ran 1.17x as fast as over the
int8 one, over a wide 2048 x 512 one (2 MB, mostly from L3) 0.7x (``bench/kernels.py
--only int8rows``)."""


def packs_wide(rows: int, n: int, k: int) -> bool:
    """Whether a product of ``rows`` rows of A by an (n, k) weight takes the ``qlinear_wide``
    rows: fewer rows than ``DIRECT_ROWS``, so that the int8 weight would be widened in the
    k loop, and wide panels within ``WIDE_MAX_BYTES``."""
    return rows < DIRECT_ROWS and 2 * _round_up(n, QPANEL) * _round_up(k, 4) <= WIDE_MAX_BYTES


QSPLIT_ROWS = 8
"""Rows at a multiple of which a thread's part of a qlinear kernel starts
(``parallel.splits``): ``ws`` holds one widened panel per that many rows, so parts widen
their panels into disjoint regions."""


def qlinear_scratch_floats(m: int, k: int) -> tuple[int, int]:
    """The floats of a qlinear kernel's scratch ``wa`` (every row of A widened: a part of
    the rows widens its own, a block at a time) and ``ws`` (one column panel of W widened
    per ``QSPLIT_ROWS`` rows: a part widens its panels into the region of its first row)."""
    depth = _round_up(k, 4)
    return m * depth, _round_up(m, QSPLIT_ROWS) // QSPLIT_ROWS * 4 * depth


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def packed_qlinear_bytes(n: int, k: int, wide: bool = False) -> int:
    """Size in bytes of a packed (n, k) weight, column sums included; ``wide``: its
    weights as int16."""
    columns = _round_up(n, QPANEL)
    return columns * _round_up(k, 4) * (2 if wide else 1) + 4 * columns + 4 + 4 * columns


def pack_qlinear_weight(weight: np.ndarray, wide: bool = False) -> np.ndarray:
    """W (n, k) int8 -> the packed bytes (uint8 array) ``qlinear`` kernels read; ``wide``:
    the panels' weights as int16 (the ``qlinear_wide`` rows).

    Raises:
        ValueError: ``weight`` is not a 2-D int8 array.
    """
    weight = np.asarray(weight)
    if weight.ndim != 2 or weight.dtype != np.int8:
        raise ValueError(f"pack_qlinear_weight expects a 2-D int8 weight, got "
                         f"{weight.dtype} of shape {list(weight.shape)}")
    n, k = weight.shape
    columns, depth = _round_up(n, QPANEL), _round_up(k, 4)
    padded = np.zeros((columns, depth), np.int8)
    padded[:n, :k] = weight
    # (panels, QPANEL, depth / 4, 4) -> (panels, depth / 4, QPANEL, 4)
    panels = padded.reshape(columns // QPANEL, QPANEL, depth // 4, 4).transpose(0, 2, 1, 3)
    sums = padded.astype(np.int32).sum(axis=1).astype("<i4")
    low, high = padded.min(axis=1), padded.max(axis=1)
    plain = (low >= SEVEN_BIT[0]) & (high <= SEVEN_BIT[1])
    negated = ~plain & (low >= -SEVEN_BIT[1]) & (high <= -SEVEN_BIT[0])
    seven = np.array([bool(np.all(plain | negated))], "<i4")
    masks = np.repeat(np.where(negated, 255, 0).astype(np.uint8), 4)
    flat = np.ascontiguousarray(panels).reshape(-1)
    return np.concatenate([(flat.astype("<i2") if wide else flat).view(np.uint8),
                           sums.view(np.uint8), seven.view(np.uint8), masks])


def unpack_qlinear_weight(packed: np.ndarray, n: int, k: int, wide: bool = False
                          ) -> np.ndarray:
    """The (n, k) int8 weight back from ``pack_qlinear_weight``'s bytes (the host provider's
    reading of them)."""
    columns, depth = _round_up(n, QPANEL), _round_up(k, 4)
    size = 2 if wide else 1
    panels = np.asarray(packed[:columns * depth * size]).view("<i2" if wide else np.int8)
    weight = panels.reshape(columns // QPANEL, depth // 4, QPANEL, 4).transpose(0, 2, 1, 3)
    return weight.reshape(columns, depth)[:n, :k].astype(np.int8)
