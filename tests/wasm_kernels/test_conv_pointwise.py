"""The pointwise convs of f32_conv2d_gemm past their last whole panel of 8 pixels: 1 to 3
pixels one at a time against the weight's tiles (``templates/conv_columns.py``), 4 or more by
the end tile, against nn.functional.conv2d with every fused epilogue, on every provider; and
a conv computed in two parts of a panel or more (as threads split it), cut at every pixel so
that any pixel may be one past the last panel, equal to it in one call bit for bit, with an
activation whose vector evaluation rounds differently from its scalar one; and the convs
with one output channel, plane by plane (``templates/conv_one_row.py``). (Parts of fewer
than 8 pixels are packed, and their edge tile's scalar epilogue may differ in the last bit:
threads split at whole panels.)"""

import numpy as np
import pytest

from nn import functional as F
from wasm_kernels import abi
from wasm_kernels.pack import PANEL
from wasm_kernels.pack_im2col import columns_per_chunk, pack_im2col_weight, scratch_floats

# (input shape (N, C, H, W), out channels): pixels past the last panel, the weight's tiles
CASES = {
    # 49 pixels: 1 past 6 panels; 47 channels: 7 tiles of 5 (4 at once, then 3), 3 of 4
    "7x7": ((1, 40, 7, 7), 47),
    # 27 pixels: 3 past; 7 channels: one tile of 4 and 3 single rows; k under the unroll
    "3x9": ((1, 9, 3, 9), 7),
    # 2 past, two images, 23 channels: 3 tiles of 5, 2 of 4
    "2x13": ((2, 37, 2, 13), 23),
    # 4 past: the end tile of 4
    "2x10": ((1, 12, 2, 10), 9),
    # 40 channels in two blocks of the driver (k = 1300: 25 rows a block)
    "deep": ((1, 1300, 3, 3), 40),
    # a chunk of 667 pixels (3 past): row blocks of 10, 10 and 13 channels (POINT_ROWS)
    "wide": ((1, 24, 23, 29), 33),
    # chunks of 320, 320 and 360 pixels (k = 200), 26 channels in blocks of 10 and 16
    "chunks": ((1, 200, 25, 40), 26),
    # one channel (conv_one_row): chunks of 1024 and 493 pixels, 1 past the last register,
    # k = 130: 16 passes of 8 planes and 2 of one
    "one": ((1, 130, 37, 41), 1),
    # one channel, two images, k = 5, 3 past the last register
    "one image of two": ((2, 5, 9, 11), 1),
    # one channel, k = 9: a pass of 8 planes and one, 55 pixels
    "one of 9": ((1, 9, 5, 11), 1),
    # three channels: the tile's single rows
    "three": ((1, 9, 5, 11), 3),
}
GEMMS = [k for k in abi.KERNELS if k.family == "conv_gemm"]


def _inputs(shape: tuple[int, ...], o: int, seed: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, np.float32)
    w = rng.standard_normal((o, shape[1], 1, 1), np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    r = rng.standard_normal((shape[0], o) + shape[2:]).astype(np.float32)
    return x, w, bias, r


@pytest.mark.parametrize("spec", GEMMS, ids=lambda s: s.name)
def test_pointwise_end_pixels_match_numpy(kernels, spec: abi.KernelSpec) -> None:  # type: ignore[no-untyped-def]
    for seed, (case, (shape, o)) in enumerate(CASES.items()):
        x, w, bias, r = _inputs(shape, o, seed)
        expected = F.conv2d(x, w, bias).astype(np.float64)
        if "r" in spec.params:
            expected += r
        for op in spec.activations:
            expected = getattr(F, op)(expected)
        n, c, h, width = shape
        pixels = h * width
        out = kernels.call(spec.name, offset=4 * (seed % 3), x=x,
                           weight=pack_im2col_weight(w, 1), bias=bias, r=r,
                           ws=(scratch_floats(c, pixels),), xp=(1,), y=expected.shape, n=n, c=c,
                           h=h, w=width, o=o, oh=h, ow=width, kh=1, kw=1, sh=1, sw=1, ph=0,
                           pw=0, dh=1, dw=1, groups=1,
                           columns=columns_per_chunk(c, pixels, o), pixels=pixels,
                           first_bytes=0)["y"]
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{spec.name} {case}")


@pytest.mark.parametrize("case", ["7x7", "one of 9"])
@pytest.mark.parametrize("name", ["f32_conv2d_gemm_add_gelu", "f32_conv2d_gemm_sigmoid"])
def test_two_parts_equal_one_call_bit_for_bit(kernels, name: str, case: str) -> None:  # type: ignore[no-untyped-def]
    shape, o = CASES[case]
    x, w, bias, r = _inputs(shape, o, 5)
    _, c, h, width = shape
    pixels = h * width
    columns = columns_per_chunk(c, pixels, o)
    memory = kernels.view()
    placed, cursor = {}, 64
    for key, array in (("x", x), ("weight", pack_im2col_weight(w, 1)), ("bias", bias),
                       ("r", r), ("ws", np.zeros(scratch_floats(c, pixels), np.float32)),
                       ("xp", np.zeros(1, np.float32)),
                       ("y", np.zeros((o, pixels), np.float32))):
        memory[cursor:cursor + array.nbytes] = array.view(np.uint8).ravel()
        placed[key], cursor = cursor, (cursor + array.nbytes + 127) // 64 * 64
    params = [p.split(":")[0] for p in abi.BY_NAME[name].params]

    def run(first: int, count: int) -> None:
        moved = {"r": 4 * first, "y": 4 * first, "ws": 4 * first * c}
        kernels.funcs(name)(
            kernels.store, *(placed[key] + moved.get(key, 0) for key in
                             ("x", "weight", "bias", "r", "ws", "xp", "y") if key in params),
            1, c, h, width, o, h, width, 1, 1, 1, 1, 0, 0, 1, 1, 1, columns, count, 4 * first)

    def output() -> np.ndarray:
        return memory[placed["y"]:placed["y"] + 4 * o * pixels].view(np.float32).copy()

    run(0, pixels)
    whole = output()
    for cut in range(PANEL, pixels - PANEL + 1):
        run(0, cut)
        run(cut, pixels - cut)
        np.testing.assert_array_equal(output(), whole, err_msg=f"{name} cut at {cut}")
