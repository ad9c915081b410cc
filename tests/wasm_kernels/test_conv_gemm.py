"""Every f32_conv2d_gemm and f32_conv2d_im2col row against nn.functional.conv2d (and torch): panels
copied half a panel (4 pixels) a register at a time at stride 1, at stride 2 from a phased
padded copy (even and odd pad, dilated, rows shorter than a vector) or unpadded, halves crossing
output rows packed pixel by pixel, a second half past the last pixel, other strides, dilation,
groups, batch > 1, output channels in tiles of 5 and 4 and left over, in one block or several (a
deep weight), pixels in several chunks (each padding the rows it reads first, down to one panel
a chunk) and a last panel shorter than 8. A 1x1 stride-1 conv reads its input in place, ending
on a 4- or 8-pixel tile that overlaps the last panel (105, 33 and 28 pixels; 15): planes of
fewer than 8 pixels (packed), of a multiple of 8 (no end tile), and input channels past the
tile's unroll of 32; at a larger stride the same after subsampling, 4 pixels at a time at stride
2 (rows of even and odd width, runs of 1-3 pixels left) and one by one otherwise. A 3x3 conv at
column stride 1, up to 96 input channels, 12 or more output channels and rows of 32 or more
reads its input in place (``taps``): rows of whole panels, ending on a 4- or 8-pixel tile,
channels past and under the 3 per iteration, unpadded (up to 48 channels: 49 packed), row stride
and dilation 2, 96 input channels (97: packed), 11 output channels and rows of 31 (packed),
groups, chunks of whole rows, and a thread's part that starts and ends mid-row (its segments
under a panel packed). At column stride 2 a padded conv reads its phased copy in place the same
way (even and odd widths and padding, 32 channels (33: packed), row dilation 2, a part starting
mid-row); unpadded it packs. A chunk's last panel holding 1-3 pixels: a deep weight in blocks of
10 rows ending in tiles of 4, single rows, and 3 pixels."""

import numpy as np
import pytest

from nn import functional as F
from wasm_kernels import abi
from wasm_kernels.pack_im2col import (
    columns_per_chunk,
    pack_im2col_weight,
    padded_floats,
    scratch_floats,
    unpack_im2col_weight,
)

# (input shape, out channels, kernel, stride, padding, dilation, groups, columns)
CASES = {
    "3x3": ((1, 3, 7, 9), 5, (3, 3), (1, 1), (1, 1), (1, 1), 1, 64),
    "3x3-wide": ((1, 5, 6, 37), 9, (3, 3), (1, 1), (1, 1), (1, 1), 1, 64),
    "3x3-chunks": ((2, 4, 9, 30), 8, (3, 3), (1, 1), (1, 1), (1, 1), 1, 24),
    "stride2": ((2, 4, 8, 36), 8, (3, 3), (2, 2), (1, 1), (1, 1), 1, 32),
    "stride2-odd": ((1, 6, 9, 41), 7, (3, 3), (2, 2), (1, 1), (1, 1), 1, 16),
    "1x1": ((1, 16, 5, 21), 13, (1, 1), (1, 1), (0, 0), (1, 1), 1, 40),
    "1x1-tiny": ((2, 5, 1, 7), 6, (1, 1), (1, 1), (0, 0), (1, 1), 1, 8),
    "1x1-exact": ((1, 33, 4, 8), 6, (1, 1), (1, 1), (0, 0), (1, 1), 1, 16),
    "1x1-grouped": ((2, 8, 3, 7), 10, (1, 1), (1, 1), (0, 0), (1, 1), 2, 8),
    "1x1-batch": ((3, 70, 3, 5), 9, (1, 1), (1, 1), (0, 0), (1, 1), 1, 64),
    "1x1-stride2": ((1, 4, 8, 40), 6, (1, 1), (2, 2), (0, 0), (1, 1), 1, 8),
    "1x1-stride2-odd": ((2, 9, 7, 23), 6, (1, 1), (2, 2), (0, 0), (1, 1), 1, 16),
    "1x1-stride2-wide": ((1, 5, 5, 48), 7, (1, 1), (2, 2), (0, 0), (1, 1), 1, 16),
    "1x1-stride2-long": ((1, 6, 3, 51), 7, (1, 1), (2, 2), (0, 0), (1, 1), 1, 24),
    "1x1-stride2-tiny": ((1, 3, 3, 5), 5, (1, 1), (2, 2), (0, 0), (1, 1), 1, 8),
    "1x1-stride3": ((1, 5, 10, 19), 7, (1, 1), (3, 3), (0, 0), (1, 1), 1, 8),
    "1x1-stride2x1": ((1, 4, 6, 11), 4, (1, 1), (2, 1), (0, 0), (1, 1), 2, 16),
    "1x1-one": ((2, 11, 6, 13), 1, (1, 1), (1, 1), (0, 0), (1, 1), 1, 16),
    "1x1-one-grouped": ((1, 6, 5, 9), 3, (1, 1), (1, 1), (0, 0), (1, 1), 3, 16),
    "1x1-one-stride2": ((1, 10, 9, 21), 1, (1, 1), (2, 2), (0, 0), (1, 1), 1, 16),
    "1x1-padded": ((1, 3, 4, 6), 4, (1, 1), (1, 1), (1, 1), (1, 1), 1, 48),
    "7x7-small": ((1, 12, 7, 7), 10, (3, 3), (1, 1), (1, 1), (1, 1), 1, 56),
    "stride3": ((1, 4, 10, 19), 5, (3, 3), (3, 3), (1, 1), (1, 1), 1, 16),
    "dilated": ((1, 4, 9, 33), 8, (3, 3), (1, 1), (2, 2), (2, 2), 1, 64),
    "grouped": ((2, 8, 6, 26), 12, (3, 3), (1, 1), (1, 1), (1, 1), 2, 32),
    "general": ((1, 4, 6, 11), 6, (2, 5), (1, 2), (2, 1), (2, 1), 2, 8),
    "kernel>input": ((1, 2, 3, 3), 3, (5, 5), (1, 1), (2, 2), (1, 1), 1, 16),
    "narrow": ((1, 5, 3, 2), 6, (3, 3), (1, 1), (1, 1), (1, 1), 1, 8),
    "stem-7x7-stride2": ((1, 3, 20, 22), 8, (7, 7), (2, 2), (3, 3), (1, 1), 1, 16),
    "halves": ((1, 3, 5, 12), 6, (3, 3), (1, 1), (1, 1), (1, 1), 1, 16),
    "stride2-halves": ((1, 5, 11, 24), 7, (3, 3), (2, 2), (1, 1), (1, 1), 1, 24),
    "stride2-pad2": ((1, 3, 10, 29), 5, (3, 3), (2, 2), (2, 2), (1, 1), 1, 16),
    "stride2-dilated": ((1, 4, 13, 26), 6, (3, 3), (2, 2), (2, 2), (2, 2), 1, 16),
    "stride2-unpadded": ((1, 4, 9, 35), 5, (3, 3), (2, 2), (0, 0), (1, 1), 1, 16),
    "stride2-narrow": ((1, 3, 6, 5), 4, (3, 3), (2, 2), (1, 1), (1, 1), 1, 8),
    "3x7-stride2": ((1, 3, 9, 20), 5, (3, 7), (1, 2), (1, 3), (1, 1), 1, 16),
    "7x7-dilated": ((1, 2, 15, 17), 3, (7, 7), (1, 1), (3, 3), (2, 2), 1, 24),
    "7x7-rows": ((1, 2, 9, 16), 5, (7, 7), (1, 1), (3, 3), (1, 1), 1, 16),
    "5x3-stride2-rows": ((1, 3, 12, 26), 6, (5, 3), (2, 2), (2, 1), (1, 1), 1, 16),
    "2x3-rows": ((1, 3, 6, 16), 5, (2, 3), (1, 1), (1, 1), (1, 1), 1, 24),
    "stride2-panel-chunks": ((2, 3, 13, 18), 5, (3, 3), (2, 2), (1, 1), (1, 1), 1, 8),
    "blocks": ((1, 130, 4, 5), 62, (3, 3), (1, 1), (1, 1), (1, 1), 1, 16),
    "taps-panel": ((1, 5, 6, 32), 12, (3, 3), (1, 1), (1, 1), (1, 1), 1, 16),
    "taps-tail": ((1, 4, 5, 36), 14, (3, 3), (1, 1), (1, 1), (1, 1), 1, 80),
    "taps-end": ((2, 7, 4, 39), 13, (3, 3), (1, 1), (1, 1), (1, 1), 1, 33),
    "taps-channels": ((1, 2, 5, 33), 12, (3, 3), (1, 1), (1, 1), (1, 1), 1, 8),
    "taps-unpadded": ((1, 6, 7, 36), 16, (3, 3), (1, 1), (0, 0), (1, 1), 1, 24),
    "taps-stride2x1": ((1, 4, 11, 34), 17, (3, 3), (2, 1), (1, 1), (2, 1), 1, 16),
    "taps-most-channels": ((1, 96, 3, 32), 12, (3, 3), (1, 1), (1, 1), (1, 1), 1, 24),
    "taps-too-many-channels": ((1, 97, 3, 32), 12, (3, 3), (1, 1), (1, 1), (1, 1), 1, 24),
    "taps-too-few-rows": ((1, 5, 4, 33), 11, (3, 3), (1, 1), (1, 1), (1, 1), 1, 24),
    "taps-unpadded-channels": ((1, 49, 4, 34), 12, (3, 3), (1, 1), (0, 0), (1, 1), 1, 24),
    "taps-too-narrow": ((1, 4, 4, 31), 12, (3, 3), (1, 1), (1, 1), (1, 1), 1, 24),
    "taps-grouped-rows": ((1, 6, 6, 34), 24, (3, 3), (1, 1), (1, 1), (1, 1), 2, 25),
    "taps-stride2": ((1, 5, 9, 66), 12, (3, 3), (2, 2), (1, 1), (1, 1), 1, 40),
    "taps-stride2-panels": ((1, 4, 7, 64), 13, (3, 3), (2, 2), (1, 1), (1, 1), 1, 64),
    "taps-stride2-pad2": ((1, 3, 8, 71), 12, (3, 3), (2, 2), (2, 2), (1, 1), 1, 37),
    "taps-stride2-odd-width": ((2, 7, 6, 79), 14, (3, 3), (2, 2), (1, 1), (1, 1), 1, 45),
    "taps-stride2-dilated-rows": ((1, 4, 11, 68), 12, (3, 3), (2, 2), (1, 1), (2, 1), 1, 40),
    "taps-stride2-most-channels": ((1, 32, 5, 64), 12, (3, 3), (2, 2), (1, 1), (1, 1), 1, 32),
    "taps-stride2-too-many-channels": ((1, 33, 5, 64), 12, (3, 3), (2, 2), (1, 1), (1, 1), 1, 32),
    "taps-stride2-unpadded": ((1, 4, 7, 67), 12, (3, 3), (2, 2), (0, 0), (1, 1), 1, 33),
    "columns-blocks": ((1, 300, 3, 3), 37, (3, 3), (1, 1), (1, 1), (1, 1), 1, 16),
    "columns-single-rows": ((1, 3, 5, 5), 7, (3, 3), (1, 1), (1, 1), (1, 1), 1, 32),
    "columns-three": ((1, 40, 5, 9), 24, (3, 3), (2, 1), (1, 1), (1, 1), 1, 16),
}
GEMMS = [k for k in abi.KERNELS if k.family == "conv_gemm"]


def _run(kernels, spec: abi.KernelSpec, case: tuple, seed: int = 0):  # type: ignore[no-untyped-def]
    shape, o, k, s, p, d, g, columns = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, np.float32)
    w = rng.standard_normal((o, shape[1] // g) + k, np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    expected = F.conv2d(x, w, bias, s, p, d, g).astype(np.float64)
    r = rng.standard_normal(expected.shape).astype(np.float32)
    if "r" in spec.params:
        expected += r
    for op in spec.activations:
        expected = getattr(F, op)(expected)
    n, c, h, width = shape
    steps = c // g * k[0] * k[1]
    pixels = expected.shape[2] * expected.shape[3]
    padded = padded_floats(c // g, (h, width), expected.shape[2:], k, s, p, d)
    out = kernels.call(spec.name, offset=4 * (seed % 3), x=x, weight=pack_im2col_weight(w, g),
                       bias=bias, r=r, ws=(scratch_floats(steps, pixels),),
                       xp=(max(padded, 1),), y=expected.shape,
                       n=n, c=c, h=h, w=width, o=o, oh=expected.shape[2], ow=expected.shape[3],
                       kh=k[0], kw=k[1], sh=s[0], sw=s[1], ph=p[0], pw=p[1], dh=d[0], dw=d[1],
                       groups=g, columns=columns, pixels=pixels, first_bytes=0)["y"]
    return out, expected


@pytest.mark.parametrize("op", ["conv2d_gemm", "conv2d_im2col"])
@pytest.mark.parametrize("case", list(CASES))
def test_conv2d_gemm_shapes(kernels, case: str, op: str) -> None:  # type: ignore[no-untyped-def]
    """Every case on both rows: f32_conv2d_im2col packs the columns of every shape (1x1 and
    the taps shapes too) and must compute the same."""
    out, expected = _run(kernels, abi.find("conv_gemm", op), CASES[case])
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=case)


@pytest.mark.parametrize("spec", GEMMS, ids=lambda s: s.name)
def test_conv2d_gemm_epilogues(kernels, spec: abi.KernelSpec) -> None:  # type: ignore[no-untyped-def]
    for seed, case in enumerate(("3x3-chunks", "stride2-odd", "1x1", "7x7-small", "grouped",
                                 "1x1-grouped", "1x1-exact", "1x1-stride2-odd", "taps-end")):
        out, expected = _run(kernels, spec, CASES[case], seed)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{spec.name} {case}")


def test_conv2d_gemm_matches_torch(kernels) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    shape, o, k, s, p, d, g, columns = CASES["stride2-odd"]
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape, np.float32)
    w = rng.standard_normal((o, shape[1] // g) + k, np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    expected = torch.nn.functional.relu(torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(bias), s, p, d, g)).numpy()
    out = kernels.call("f32_conv2d_gemm_relu", x=x, weight=pack_im2col_weight(w, g), bias=bias,
                       ws=(scratch_floats(shape[1] * 9, expected[0, 0].size),),
                       xp=(padded_floats(shape[1], shape[2:], expected.shape[2:], k, s, p, d),),
                       y=expected.shape,
                       n=shape[0], c=shape[1], h=shape[2], w=shape[3], o=o,
                       oh=expected.shape[2], ow=expected.shape[3], kh=3, kw=3, sh=2, sw=2, ph=1,
                       pw=1, dh=1, dw=1, groups=g, columns=columns,
                       pixels=expected[0, 0].size, first_bytes=0)["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel", ["f32_conv2d_gemm_add_relu", "f32_conv2d_im2col_add_relu"])
@pytest.mark.parametrize("case, first, count", [
    ("3x3-chunks", 8, 19), ("stride2-odd", 8, 19), ("1x1", 8, 19), ("1x1-exact", 8, 19),
    ("1x1-stride2-odd", 8, 19), ("1x1-stride2-wide", 8, 19), ("7x7-small", 8, 19),
    ("taps-tail", 8, 19), ("taps-tail", 33, 41), ("taps-end", 35, 50), ("taps-stride2", 8, 19),
    ("taps-stride2", 30, 45), ("stride2-halves", 4, 30), ("7x7-rows", 5, 60)])
def test_conv2d_gemm_computes_only_its_part_of_the_pixels(kernels, case: str, first: int,
                                                          count: int, kernel: str) -> None:  # type: ignore[no-untyped-def]
    """A thread's part: pixels first .. first + count of each plane, with Y, R and ws moved
    there by the caller; the other pixels of Y stay as they were (a part reading its input
    in place across rows of 36 and 39: 3 and 4 pixels of a row packed, then a whole row read
    in place, then 2 and 7 pixels packed). xp starts as NaN: the part
    pads every row its pixels read (and may leave the others)."""
    shape, o, k, s, p, d, g, columns = CASES[case]
    shape = (1,) + shape[1:]
    rng = np.random.default_rng(9)
    x = rng.standard_normal(shape, np.float32)
    w = rng.standard_normal((o, shape[1]) + k, np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    r = rng.standard_normal(F.conv2d(x, w, bias, s, p, d).shape).astype(np.float32)
    expected = F.relu(F.conv2d(x, w, bias, s, p, d) + r)
    plane = expected[0, 0].size
    count = min(plane - first, count)
    steps = shape[1] * k[0] * k[1]
    before = np.full(expected.shape, 7.0, np.float32)
    memory = kernels.view()
    placed, cursor = {}, 64
    padded = padded_floats(shape[1], shape[2:], expected.shape[2:], k, s, p, d)
    for key, array in (("x", x), ("weight", pack_im2col_weight(w, 1)), ("bias", bias),
                       ("r", r), ("ws", np.zeros(scratch_floats(steps, plane), np.float32)),
                       ("xp", np.full(max(padded, 1), np.nan, np.float32)), ("y", before)):
        memory[cursor:cursor + array.nbytes] = array.view(np.uint8).ravel()
        placed[key], cursor = cursor, (cursor + array.nbytes + 127) // 64 * 64
    moved = {"r": 4 * first, "y": 4 * first, "ws": 4 * first * steps}
    kernels.funcs(kernel)(
        kernels.store, *(placed[key] + moved.get(key, 0)
                         for key in ("x", "weight", "bias", "r", "ws", "xp", "y")),
        1, shape[1], *shape[2:], o, *expected.shape[2:], *k, *s, *p, *d, 1, columns, count,
        4 * first)
    out = memory[placed["y"]:placed["y"] + before.nbytes].view(np.float32).reshape(o, plane)
    want = before.reshape(o, plane).copy()
    want[:, first:first + count] = expected.reshape(o, plane)[:, first:first + count]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_pack_im2col_weight_round_trip_chunks_and_errors() -> None:
    rng = np.random.default_rng(7)
    for o, groups, cg in ((6, 3, 2), (5, 1, 2), (8, 2, 2), (13, 1, 2), (9, 1, 2), (62, 1, 130)):
        w = rng.standard_normal((o, cg, 3, 1), np.float32)
        packed = pack_im2col_weight(w, groups)
        assert packed.size == w.size
        np.testing.assert_array_equal(unpack_im2col_weight(packed, o, cg, 3, 1, groups), w)
    # rows 0..3 step-major: step 1 (input channel 0, tap (1, 0)) of the 4 rows
    w = rng.standard_normal((5, 2, 3, 1), np.float32)
    np.testing.assert_array_equal(pack_im2col_weight(w, 1)[4:8], w[:4, 0, 1, 0])
    np.testing.assert_array_equal(pack_im2col_weight(w, 1)[24:], w[4].ravel())
    # 9 rows: a tile of 5 (rows 0..3 step-major, row 4 row-major), then rows 5..8 step-major
    w = rng.standard_normal((9, 2, 3, 1), np.float32)
    np.testing.assert_array_equal(pack_im2col_weight(w, 1)[24:30], w[4].ravel())
    np.testing.assert_array_equal(pack_im2col_weight(w, 1)[30:34], w[5:, 0, 0, 0])
    assert columns_per_chunk(4608, 49, 512) == 56  # one chunk: the weight is the larger
    assert columns_per_chunk(576, 3136, 64) == 112  # CHUNK_BYTES of columns
    assert columns_per_chunk(1152, 784, 128) == 128  # as many columns as weight rows
    assert columns_per_chunk(1 << 20, 10, 1) == 8
    # 'same' padding of an even kernel: one more row and column at the end
    assert padded_floats(3, (6, 5), (6, 5), (2, 2), (1, 1), (0, 0), (1, 1)) == 0
    assert padded_floats(3, (6, 5), (6, 5), (4, 4), (1, 1), (1, 1), (1, 1)) == 3 * 9 * 8
    with pytest.raises(ValueError, match=r"shape \(o, c / groups, kh, kw\), got shape \(4, 2\)"):
        pack_im2col_weight(np.zeros((4, 2), np.float32), 1)
    with pytest.raises(ValueError, match="6 output channels does not split into groups=4"):
        pack_im2col_weight(np.zeros((6, 1, 3, 3), np.float32), 4)
