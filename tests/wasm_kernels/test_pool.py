"""max_pool2d and avg_pool2d rows against nn.functional: padding, dilation, ceil_mode; 3x3
windows (straight-line taps) and others (loops); rows wide enough for the vector ISAs' four
outputs per step at strides 1 and 2 beside their one-by-one edges, and other strides."""

import numpy as np
import pytest

from nn import functional as F

# (input shape, kernel, stride, padding, dilation, ceil_mode)
CASES = {
    "2x2": ((2, 3, 8, 8), 2, 2, 0, 1, False),
    "3x3-s2-p1": ((1, 4, 9, 10), 3, 2, 1, 1, False),
    "ceil": ((1, 2, 7, 7), 3, 2, 0, 1, True),
    "dilated": ((1, 2, 9, 9), 2, 1, 1, 2, False),
    "3x3-dilated": ((1, 3, 11, 10), 3, 1, 2, 2, False),
    "5x5": ((1, 2, 9, 8), 5, 2, 2, 1, True),
    "2x2-wide": ((1, 3, 12, 37), 2, 2, 0, 1, False),
    "3x3-s2-p1-wide": ((1, 2, 15, 41), 3, 2, 1, 1, False),
    "3x3-s2-p1-ceil-wide": ((1, 2, 14, 40), 3, 2, 1, 1, True),
    "5x5-s1-p2-wide": ((1, 2, 13, 29), 5, 1, 2, 1, False),
    "dilated-wide": ((1, 2, 12, 30), 3, 1, 2, 2, False),
    "4x4-s2-dilated-wide": ((1, 2, 12, 33), 4, 2, 3, 2, False),
    "s3-wide": ((1, 2, 10, 31), 3, 3, 1, 1, False),
    "rows-5x1": ((1, 3, 13, 26), (5, 1), 1, (2, 0), 1, False),
    "columns-1x5": ((1, 3, 13, 26), (1, 5), 1, (0, 2), 1, False),
    "columns-1x3-s2": ((1, 3, 6, 27), (1, 3), (1, 2), (0, 1), 1, False),
    "3x3-s2-ceil-wide": ((1, 2, 13, 42), 3, 2, 0, 1, True),
    "3x3-s1-p1-wide": ((1, 2, 7, 23), 3, 1, 1, 1, False),
    "2x2-s1-wide": ((1, 2, 6, 26), 2, 1, 0, 1, False),
    "2x1-s2x1-wide": ((1, 2, 9, 22), (2, 1), (2, 1), 0, 1, False),
    "1x2-s1x2-wide": ((1, 2, 5, 27), (1, 2), (1, 2), 0, 1, False),
    "1x4-s1-wide": ((1, 2, 5, 27), (1, 4), 1, (0, 2), 1, False),
    "2x3-s2-p1-ceil-wide": ((1, 2, 8, 35), (2, 3), 2, (1, 1), 1, True),
}


def _pair(n: int | tuple[int, int]) -> tuple[int, int]:
    return (n, n) if isinstance(n, int) else n


def _window(case: tuple) -> dict[str, int]:
    shape, k, s, p, d, _ = case
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = map(_pair, (k, s, p, d))
    return {"planes": shape[0] * shape[1], "h": shape[2], "w": shape[3], "kh": kh, "kw": kw,
            "sh": sh, "sw": sw, "ph": ph, "pw": pw, "dh": dh, "dw": dw}


@pytest.mark.parametrize("every", [23, 331])
@pytest.mark.parametrize("case", list(CASES))
def test_max_pool2d(kernels, case: str, every: int) -> None:  # type: ignore[no-untyped-def]
    shape, k, s, p, d, ceil = CASES[case]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    # NOTE: a NaN tap makes its window's maximum NaN, in every lane; sparse NaNs and
    # infinities leave most rows to the vector ISAs' column-maxima blocks, which hand a row
    # with one in reach to the general one
    x.flat[::every] = np.nan
    x.flat[every // 2::every * 2] = np.inf
    x.flat[every // 2 + 1::every * 2] = -np.inf
    expected = F.max_pool2d(x, k, s, p, d, ceil)
    out = kernels.call("f32_max_pool2d", offset=4, x=x, y=expected.shape,
                       oh=expected.shape[2], ow=expected.shape[3], **_window(CASES[case]))["y"]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("case", [c for c in CASES if _pair(CASES[c][4]) == (1, 1)])
def test_avg_pool2d(kernels, case: str, count_include_pad: bool) -> None:  # type: ignore[no-untyped-def]
    shape, k, s, p, _, ceil = CASES[case]
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    expected = F.avg_pool2d(x, k, s, p, ceil, count_include_pad)
    ones = np.ones((1, 1) + shape[2:], np.float32)
    sums = F.avg_pool2d(ones, k, s, p, ceil, count_include_pad, divisor_override=1)
    scale = (F.avg_pool2d(ones, k, s, p, ceil, count_include_pad) / sums)[0, 0]
    out = kernels.call("f32_avg_pool2d", x=x, scale=scale.astype(np.float32),
                       y=expected.shape, oh=expected.shape[2], ow=expected.shape[3],
                       **_window(CASES[case]))["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
