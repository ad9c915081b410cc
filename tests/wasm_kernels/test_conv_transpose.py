"""f32_conv_transpose2d and f32_adaptive_avg_pool2d against torch: every tile width and its
tails, strides 1-3, padding to the limit, output padding, dilation, groups, and depthwise
(the gather path: phases without taps, borders, overlapping remainder tiles)."""

import numpy as np
import pytest

from wasm_kernels.pack import pack_conv_transpose_weight

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# (input shape, out channels, kernel, stride, padding, output padding, dilation, groups)
CASES = {
    "3x3": ((1, 3, 7, 9), 5, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1),
    "stride2-outpad": ((2, 4, 5, 6), 8, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
    "stride3": ((1, 5, 4, 11), 6, (4, 3), (3, 3), (0, 2), (2, 0), (1, 1), 1),
    "2x2-stride2": ((1, 8, 6, 19), 9, (2, 2), (2, 2), (0, 0), (0, 0), (1, 1), 1),
    "dilation2": ((1, 4, 6, 7), 5, (3, 3), (1, 2), (2, 1), (1, 1), (2, 2), 1),
    "groups2": ((2, 6, 5, 9), 10, (3, 2), (2, 1), (1, 0), (0, 0), (1, 3), 2),
    "depthwise": ((1, 6, 9, 20), 6, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 6),
    "depthwise-x2": ((1, 3, 6, 7), 6, (3, 3), (1, 2), (1, 1), (0, 1), (1, 1), 3),
    "depthwise-s3-padded": ((2, 4, 5, 7), 4, (3, 2), (3, 3), (2, 1), (2, 2), (1, 1), 4),
    "depthwise-1x1-s3": ((1, 3, 1, 2), 3, (1, 1), (3, 3), (0, 0), (2, 1), (1, 1), 3),
    "depthwise-x2-wide": ((1, 2, 3, 45), 4, (4, 5), (2, 1), (1, 2), (1, 0), (1, 1), 2),
    "depthwise-dilated": ((1, 4, 5, 6), 4, (3, 3), (2, 2), (1, 1), (1, 1), (2, 2), 4),
    "padding-limit": ((1, 2, 5, 5), 3, (3, 3), (1, 1), (2, 2), (0, 0), (1, 1), 1),
    "1x1-stride2": ((1, 4, 3, 5), 4, (1, 1), (2, 2), (0, 0), (1, 1), (1, 1), 1),
    "wide": ((1, 2, 3, 37), 17, (1, 5), (1, 1), (0, 2), (0, 0), (1, 1), 1),
    "padding>kernel": ((1, 3, 5, 6), 4, (2, 2), (3, 3), (2, 3), (1, 2), (1, 1), 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_conv_transpose2d(kernels, case: str) -> None:  # type: ignore[no-untyped-def]
    shape, o, k, s, p, op, d, g = CASES[case]
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal(shape, np.float32)
    w = rng.standard_normal((shape[1], o // g) + k, np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    expected = TF.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w),
                                   torch.from_numpy(bias), s, p, op, g, d).numpy()
    n, c, h, width = shape
    out = kernels.call("f32_conv_transpose2d", offset=4 * (len(case) % 3), x=x,
                       weight=pack_conv_transpose_weight(w, g), bias=bias, y=expected.shape,
                       n=n, c=c, h=h, w=width, o=o, oh=expected.shape[2], ow=expected.shape[3],
                       kh=k[0], kw=k[1],
                       sh=s[0], sw=s[1], ph=p[0], pw=p[1], dh=d[0], dw=d[1], groups=g)["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=case)


@pytest.mark.parametrize("sizes", [((7, 9), (3, 4)), ((5, 5), (5, 5)), ((4, 6), (6, 9)),
                                   ((1, 3), (2, 1)), ((8, 8), (4, 2))])
def test_adaptive_avg_pool2d(kernels, sizes) -> None:  # type: ignore[no-untyped-def]
    (h, w), out_size = sizes
    x = np.random.default_rng(h * w).standard_normal((2, 3, h, w), np.float32)
    expected = TF.adaptive_avg_pool2d(torch.from_numpy(x), out_size).numpy()
    out = kernels.call("f32_adaptive_avg_pool2d", x=x, y=expected.shape, planes=6, h=h, w=w,
                       oh=out_size[0], ow=out_size[1])["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
