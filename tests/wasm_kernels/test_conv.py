"""Every conv2d row against nn.functional.conv2d: each tap loop (pointwise, three-wide,
strided, gathered), clipped kernel rows, border columns, groups and depthwise."""

import numpy as np
import pytest

from nn import functional as F
from wasi_intrinsics.kernels import ACTIVATIONS
from wasm_kernels import abi
from wasm_kernels.pack import pack_conv_weight

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
    for part in spec.name.split("_")[2:]:
        if part in ACTIVATIONS:
            expected = ACTIVATIONS[part](expected)
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
    for seed, case in enumerate(("3x3", "1x1", "depthwise")):
        out, expected = _run(kernels, spec, CASES[case], seed)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{spec.name} {case}")
