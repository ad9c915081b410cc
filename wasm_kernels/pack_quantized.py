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
its place, so the kernels' k loop loads them without widening them. A ``mixed`` packing (the
``qlinear_mixed`` rows) is a wide one whose panels of 7-bit columns (every column in
``SEVEN_BIT`` or negated in it) hold instead, in the first half of their slot, the int8
panel's layout of ``s * w + SEVEN_SHIFT`` (``s`` the column's sign, -1 where its mask is set):
the relaxed module's kernels multiply them with the relaxed dot. After the masks it has one
int32 per panel, 1 for such a panel, else 0.
"""

from __future__ import annotations

import numpy as np

QPANEL = 8
"""Columns of W per packed panel (two v128 of four columns by four steps of k)."""


SEVEN_BIT = (-64, 63)
"""The weights that plus 64 are 7-bit (the relaxed dot's second operand, exact on every
engine). A column in [-63, 64] (onnxruntime's ``reduce_range`` weights are in [-64, 64]) is
used negated."""

SEVEN_SHIFT = 64
"""What 7-bit weights (in [-64, 63]) are stored plus, making them the relaxed dot's unsigned
7-bit operand; a row's product then owes ``SEVEN_SHIFT * sum(A)``."""

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


MIXED_SHARE = (0.25, 0.9)
"""The least share of 7-bit panels with which a product of fewer than ``DIRECT_ROWS`` rows,
and one of more, takes the ``qlinear_mixed`` rows. In the relaxed module, all panels 7-bit,
the 7-bit tile ran 1 x 256 x 1024 1.04-1.07x the wide one and 24 x 512 x 1024 1.29x the int8
one, the wide tile on blocks of ``MIXED_ROWS`` rows 1.03x int8 (``bench/kernels.py --only
int8rows``); but the packing's other panels are int16, twice the int8 bytes, and its kernel
does more per call: tashkeel_bilstm (recurrent weights 0-74% 7-bit panels, input ones 15-99%)
ran 0.95-0.98x as fast with every 7-bit panel taken, in one process round-robin against its
build without mixed rows (caches shared with the other builds); its weights with few 7-bit
panels then keep the wide or int8 packing."""


def packs_mixed(rows: int, weight: np.ndarray) -> bool:
    """Whether a product of ``rows`` rows of A by the (n, k) int8 ``weight`` takes the
    ``qlinear_mixed`` rows: its mixed packing within ``WIDE_MAX_BYTES``, and ``MIXED_SHARE``
    of its panels 7-bit (``seven_bit_panels``), at ``DIRECT_ROWS`` rows or more not all of
    them (the int8 packing's 4-row 7-bit tile takes those)."""
    n, k = weight.shape
    if 2 * _round_up(n, QPANEL) * _round_up(k, 4) > WIDE_MAX_BYTES:
        return False
    share = float(np.mean(seven_bit_panels(weight)))
    if rows < DIRECT_ROWS:
        return share >= MIXED_SHARE[0]
    return MIXED_SHARE[1] <= share < 1


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


def packed_qlinear_bytes(n: int, k: int, wide: bool = False, mixed: bool = False) -> int:
    """Size in bytes of a packed (n, k) weight, column sums included; ``wide``: its
    weights as int16; ``mixed``: wide, 7-bit panels as bytes, plus the panels' flags."""
    columns = _round_up(n, QPANEL)
    return (columns * _round_up(k, 4) * (2 if wide or mixed else 1) + 4 * columns + 4
            + 4 * columns + (4 * columns // QPANEL if mixed else 0))


def seven_bit_panels(weight: np.ndarray) -> np.ndarray:
    """Per ``QPANEL``-column panel of W (n, k) int8, whether every column is 7-bit (in
    ``SEVEN_BIT`` or negated in it): the panels a ``mixed`` packing stores as bytes."""
    columns = _round_up(weight.shape[0], QPANEL)
    padded = np.zeros((columns, weight.shape[1]), np.int8)
    padded[:weight.shape[0]] = weight
    plain, negated = _seven_bit_columns(padded)
    return np.all((plain | negated).reshape(-1, QPANEL), axis=1)


def _seven_bit_columns(padded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The columns of W whose weights are 7-bit, and those used negated (the rest)."""
    low, high = padded.min(axis=1), padded.max(axis=1)
    plain = (low >= SEVEN_BIT[0]) & (high <= SEVEN_BIT[1])
    negated = ~plain & (low >= -SEVEN_BIT[1]) & (high <= -SEVEN_BIT[0])
    return plain, negated


def pack_qlinear_weight(weight: np.ndarray, wide: bool = False, mixed: bool = False
                        ) -> np.ndarray:
    """W (n, k) int8 -> the packed bytes (uint8 array) ``qlinear`` kernels read; ``wide``:
    the panels' weights as int16 (the ``qlinear_wide`` rows); ``mixed``: wide but the 7-bit
    panels as bytes (the ``qlinear_mixed`` rows, the module docstring).

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
    plain, negated = _seven_bit_columns(padded)
    seven = np.array([bool(np.all(plain | negated))], "<i4")
    masks = np.repeat(np.where(negated, 255, 0).astype(np.uint8), 4)
    tail = [sums.view(np.uint8), seven.view(np.uint8), masks]
    if not mixed:
        flat = np.ascontiguousarray(panels).reshape(-1)
        return np.concatenate([(flat.astype("<i2") if wide else flat).view(np.uint8), *tail])
    flags = np.all((plain | negated).reshape(-1, QPANEL), axis=1)
    slots = np.zeros((columns // QPANEL, 2 * depth * QPANEL), np.uint8)
    slots[~flags] = panels[~flags].reshape(-1, depth * QPANEL).astype("<i2").view(np.uint8)
    # s * w + SEVEN_SHIFT, s the column's sign, at (panel, step, column, 4)
    signs = np.where(negated, -1, 1).reshape(-1, 1, QPANEL, 1)
    bytes7 = (panels.astype(np.int16) * signs + SEVEN_SHIFT).astype(np.uint8)
    slots[flags, :depth * QPANEL] = bytes7[flags].reshape(-1, depth * QPANEL)
    return np.concatenate([slots.reshape(-1), *tail,
                           flags.astype("<i4").view(np.uint8)])


def unpack_qlinear_weight(packed: np.ndarray, n: int, k: int, wide: bool = False,
                          mixed: bool = False) -> np.ndarray:
    """The (n, k) int8 weight back from ``pack_qlinear_weight``'s bytes (the host provider's
    reading of them)."""
    columns, depth = _round_up(n, QPANEL), _round_up(k, 4)
    if mixed:
        packed = np.asarray(packed)
        size = packed_qlinear_bytes(n, k, mixed=True)
        flags = packed[size - 4 * columns // QPANEL:size].view("<i4").astype(bool)
        masks = packed[size - 4 * columns // QPANEL - 4 * columns:
                       size - 4 * columns // QPANEL].view("<i4")[:, None]
        slots = packed[:columns * depth * 2].reshape(columns // QPANEL, -1)
        values = np.zeros((columns // QPANEL, depth * QPANEL), np.int16)
        values[~flags] = slots[~flags].copy().view("<i2")
        values[flags] = slots[flags, :depth * QPANEL].astype(np.int16) - SEVEN_SHIFT
        panel = values.reshape(-1, depth // 4, QPANEL, 4).transpose(0, 2, 1, 3)
        signed = panel.reshape(columns, depth) * np.where(masks != 0, -1, 1)
        # only the 7-bit panels' columns are stored negated
        plain = np.repeat(~flags, QPANEL)[:, None]
        rows = np.where(plain, panel.reshape(columns, depth), signed)
        return rows[:n, :k].astype(np.int8)
    size = 2 if wide else 1
    panels = np.asarray(packed[:columns * depth * size]).view("<i2" if wide else np.int8)
    weight = panels.reshape(columns // QPANEL, depth // 4, QPANEL, 4).transpose(0, 2, 1, 3)
    return weight.reshape(columns, depth)[:n, :k].astype(np.int8)
