"""Every conv2d row against nn.functional.conv2d: contiguous, stride-2 and gathered pixel
loads; interior, masked and column-by-column tiles; rows narrower than a tile; clipped kernel
rows; output channels in blocks of 4 and single ones; groups; the depthwise tile; the row
tile of few input channels (odd sizes, padding 0/1/3, stride 1/2); batch > 1;
and an input at either end of linear memory, where a masked load would leave it."""

import numpy as np
import pytest

from nn import functional as F
from wasm_kernels import abi
from wasm_kernels.pack import pack_conv_weight, unpack_conv_weight

# (input shape, out channels, kernel, stride, padding, dilation, groups)
CASES = {
    "3x3": ((1, 3, 7, 9), 5, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    "3x3-stride2": ((2, 4, 8, 8), 8, (3, 3), (2, 2), (1, 1), (1, 1), 1),
    "1x1": ((1, 16, 5, 21), 9, (1, 1), (1, 1), (0, 0), (1, 1), 1),
    "1x1-stride2": ((1, 4, 8, 8), 8, (1, 1), (2, 2), (0, 0), (1, 1), 1),
    "1x1-padded": ((1, 3, 4, 6), 4, (1, 1), (1, 1), (1, 1), (1, 1), 1),
    "depthwise": ((1, 6, 9, 20), 6, (3, 3), (1, 1), (1, 1), (1, 1), 6),
    "depthwise-x2": ((1, 3, 6, 7), 6, (3, 3), (2, 1), (1, 1), (1, 1), 3),
    "general": ((1, 4, 6, 11), 6, (2, 5), (1, 2), (2, 1), (2, 1), 2),
    "kernel>input": ((1, 2, 3, 3), 3, (5, 5), (1, 1), (2, 2), (1, 1), 1),
    "7x7-stride2": ((1, 3, 16, 17), 8, (7, 7), (2, 2), (3, 3), (1, 1), 1),
    "odd-width": ((1, 8, 5, 13), 8, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    "narrow": ((1, 5, 3, 2), 6, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    "stride2-odd": ((2, 6, 9, 11), 7, (3, 3), (2, 2), (1, 1), (1, 1), 1),
    "stride3": ((1, 4, 10, 19), 5, (3, 3), (3, 3), (1, 1), (1, 1), 1),
    "dilated": ((1, 4, 9, 17), 8, (3, 3), (1, 1), (2, 2), (2, 2), 1),
    "1x1-wide": ((1, 12, 3, 30), 13, (1, 1), (1, 1), (0, 0), (1, 1), 1),
    "grouped": ((1, 8, 6, 10), 8, (3, 3), (1, 1), (1, 1), (1, 1), 2),
    "depthwise-stride2": ((2, 8, 11, 23), 8, (3, 3), (2, 2), (1, 1), (1, 1), 8),
    "depthwise-wide": ((1, 4, 6, 37), 4, (3, 3), (1, 1), (1, 1), (1, 1), 4),
    "depthwise-narrow": ((1, 3, 4, 3), 3, (3, 3), (1, 1), (1, 1), (1, 1), 3),
    "depthwise-5x5": ((1, 4, 8, 12), 4, (5, 5), (1, 1), (2, 2), (1, 1), 4),
    "depthwise-dilated": ((1, 4, 8, 12), 4, (3, 3), (1, 1), (2, 2), (2, 2), 4),
    "row-stride2-odd": ((2, 3, 13, 37), 12, (3, 3), (2, 2), (1, 1), (1, 1), 1),
    "row-unpadded": ((1, 3, 9, 29), 8, (3, 3), (1, 1), (0, 0), (1, 1), 1),
    "row-pad3": ((1, 2, 7, 21), 6, (3, 3), (1, 1), (3, 3), (1, 1), 1),
    "row-one-channel": ((1, 1, 10, 41), 9, (3, 3), (2, 2), (0, 0), (1, 1), 1),
    "row-stride-1x2": ((1, 4, 6, 50), 4, (3, 3), (1, 2), (1, 1), (1, 1), 1),
    "row-3x5": ((1, 3, 9, 30), 8, (5, 3), (2, 2), (2, 1), (1, 1), 1),
}
CONVS = [k for k in abi.KERNELS if k.family == "conv"]


def _run(kernels, spec: abi.KernelSpec, case: tuple, seed: int = 0):  # type: ignore[no-untyped-def]
    shape, o, k, s, p, d, g = case
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
    out = kernels.call(spec.name, offset=4 * (seed % 3), x=x, weight=pack_conv_weight(w, g), bias=bias, r=r,
                       y=expected.shape, n=n, c=c, h=h, w=width, o=o, oh=expected.shape[2],
                       ow=expected.shape[3], kh=k[0], kw=k[1], sh=s[0], sw=s[1], ph=p[0],
                       pw=p[1], dh=d[0], dw=d[1], groups=g)["y"]
    return out, expected


@pytest.mark.parametrize("case", list(CASES))
def test_conv2d_shapes(kernels, case: str) -> None:  # type: ignore[no-untyped-def]
    out, expected = _run(kernels, abi.BY_NAME["f32_conv2d"], CASES[case])
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=case)


@pytest.mark.parametrize("spec", CONVS, ids=lambda s: s.name)
def test_conv2d_epilogues(kernels, spec: abi.KernelSpec) -> None:  # type: ignore[no-untyped-def]
    # odd-width and 1x1-wide: 8 and 12 channels, the 8-channel loop of the activation
    # variants with masked tiles and with a remainder
    for seed, case in enumerate(("3x3", "1x1", "depthwise", "narrow", "stride2-odd",
                                 "depthwise-stride2", "odd-width", "1x1-wide",
                                 "row-stride2-odd", "row-unpadded")):
        out, expected = _run(kernels, spec, CASES[case], seed)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{spec.name} {case}")


@pytest.mark.parametrize("case", ["stride2-odd", "depthwise-wide", "row-stride2-odd",
                                  "row-unpadded"])
@pytest.mark.parametrize("end", ["start", "end"])
def test_conv2d_input_at_memory_edge(kernels, end: str,  # type: ignore[no-untyped-def]
                                     case: str) -> None:
    """X at address 0 or ending at the end of memory: masked loads there (and the depthwise
    tile's register past its last tap) would fall outside linear memory, so those tiles go
    column by column (a trap would fail the test)."""
    shape, o, k, s, p, d, g = CASES[case]
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape, np.float32)
    w = rng.standard_normal((o, shape[1] // g) + k, np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    expected = F.conv2d(x, w, bias, s, p, d, g)
    memory = kernels.view()
    x_at = 0 if end == "start" else memory.size - x.nbytes
    packed = pack_conv_weight(w, g)
    w_at = x.nbytes + 64 if end == "start" else 64
    y_at = w_at + packed.nbytes + 64
    for at, array in ((x_at, x), (w_at, packed), (y_at + expected.nbytes + 64, bias)):
        memory[at:at + array.nbytes] = array.view(np.uint8).ravel()
    n, c, h, width = shape
    kernels.funcs("f32_conv2d")(kernels.store, x_at, w_at, y_at + expected.nbytes + 64, y_at, n,
                                c, h, width, o, *expected.shape[2:], *k, *s, *p, *d, g)
    out = memory[y_at:y_at + expected.nbytes].view(np.float32).reshape(expected.shape)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_pack_conv_weight_round_trip_and_errors() -> None:
    rng = np.random.default_rng(7)
    for o, groups in ((6, 3), (5, 1), (8, 2)):
        w = rng.standard_normal((o, 2, 3, 1), np.float32)
        packed = pack_conv_weight(w, groups)
        # each group's o / groups channels padded to blocks of 4
        assert packed.size == groups * -(-(o // groups) // 4) * 4 * 2 * 3 * 1
        np.testing.assert_array_equal(unpack_conv_weight(packed, o, 2, 3, 1, groups), w)
    # block 0 of group 0 at tap (0, 0), input channel 1: output channels 0..3
    w = rng.standard_normal((4, 2, 2, 2), np.float32)
    np.testing.assert_array_equal(pack_conv_weight(w, 1)[4:8], w[:, 1, 0, 0])
    with pytest.raises(ValueError, match=r"shape \(o, c / groups, kh, kw\), got shape \(4, 2\)"):
        pack_conv_weight(np.zeros((4, 2), np.float32), 1)
    with pytest.raises(ValueError, match="6 output channels does not split into groups=4"):
        pack_conv_weight(np.zeros((6, 1, 3, 3), np.float32), 4)
