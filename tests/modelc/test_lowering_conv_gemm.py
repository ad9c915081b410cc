"""conv2d lowered through the kernel ``pack_im2col.runs_as_gemm`` picks (``f32_conv2d_gemm``:
im2col into the node's scratch, then the dense tile; or the direct ``f32_conv2d``), against
eager nn and torch on every kernel provider: stride, dilation, groups, 'same' padding of an
even kernel, pointwise convs, fused epilogues and a dynamic batch."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import runtime
from nn import functional as F
from wasm_kernels.pack_im2col import runs_as_gemm
from wasm_kernels.wasm import read_module

RNG = np.random.default_rng(1)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


W_3X3 = _x(8, 3, 3, 3)
W_48 = _x(48, 8, 3, 3)
W_GROUPED = _x(12, 4, 3, 3)
W_EVEN = _x(6, 3, 4, 4)
W_POINT = _x(20, 16, 1, 1)
BIAS = _x(48)

# name: (model, example input, dynamic axes, kernel it must lower to, torch's version)
CASES = {
    "gemm_stride2_batch": (
        Lambda(lambda x: F.relu(F.conv2d(x, W_48[:8], BIAS[:8], stride=2, padding=1))),
        _x(2, 8, 9, 11), {"input0": {0: ("batch", 1, 3)}}, "f32_conv2d_im2col_relu",
        lambda t, x: t.relu(t.nn.functional.conv2d(x, t.tensor(W_48[:8]), t.tensor(BIAS[:8]),
                                                   stride=2, padding=1))),
    "direct_rgb_stride2_batch": (
        Lambda(lambda x: F.relu(F.conv2d(x, W_3X3, BIAS[:8], stride=2, padding=1))),
        _x(2, 3, 17, 39), {"input0": {0: ("batch", 1, 3)}}, "f32_conv2d_relu",
        lambda t, x: t.relu(t.nn.functional.conv2d(x, t.tensor(W_3X3), t.tensor(BIAS[:8]),
                                                   stride=2, padding=1))),
    "gemm_rgb_stride2_in_place_silu": (
        Lambda(lambda x: F.silu(F.conv2d(x, W_48[:32, :3], BIAS[:32], stride=2, padding=1))),
        _x(2, 3, 9, 70), {"input0": {0: ("batch", 1, 3)}}, "f32_conv2d_gemm_silu",
        lambda t, x: t.nn.functional.silu(t.nn.functional.conv2d(
            x, t.tensor(W_48[:32, :3]), t.tensor(BIAS[:32]), stride=2, padding=1))),
    "gemm_many_channels_silu": (
        Lambda(lambda x: F.silu(F.conv2d(x, W_48, BIAS, padding=1))), _x(1, 8, 5, 40), {},
        "f32_conv2d_gemm_silu",
        lambda t, x: t.nn.functional.silu(t.nn.functional.conv2d(x, t.tensor(W_48), t.tensor(BIAS),
                                                   padding=1))),
    "gemm_grouped_dilated": (
        Lambda(lambda x: F.conv2d(x, W_GROUPED, None, padding=2, dilation=2, groups=2)),
        _x(1, 8, 7, 9), {}, "f32_conv2d_im2col",
        lambda t, x: t.nn.functional.conv2d(x, t.tensor(W_GROUPED), None, padding=2,
                                            dilation=2, groups=2)),
    "gemm_same_even_kernel": (
        Lambda(lambda x: F.conv2d(x, W_EVEN, None, padding="same")), _x(1, 3, 8, 9), {},
        "f32_conv2d_im2col",
        lambda t, x: t.nn.functional.conv2d(x, t.tensor(W_EVEN), None, padding="same")),
    "gemm_pointwise_residual": (
        Lambda(lambda x: F.relu(F.conv2d(x, W_POINT[:16], None) + x)), _x(1, 16, 5, 7), {},
        "f32_conv2d_gemm_add_relu",
        lambda t, x: t.relu(t.nn.functional.conv2d(x, t.tensor(W_POINT[:16])) + x)),
    "direct_wide_rows": (
        Lambda(lambda x: F.conv2d(x, W_3X3, BIAS[:8], padding=1)), _x(1, 3, 4, 50), {},
        "f32_conv2d",
        lambda t, x: t.nn.functional.conv2d(x, t.tensor(W_3X3), t.tensor(BIAS[:8]), padding=1)),
    "gemm_pointwise_expansion_large_plane": (
        Lambda(lambda x: F.conv2d(x, W_POINT, None)), _x(1, 16, 60, 61), {}, "f32_conv2d_gemm",
        lambda t, x: t.nn.functional.conv2d(x, t.tensor(W_POINT))),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    model, x, dynamic, kernel, reference = CASES[request.param]
    return model, modelc.export(model, (x,), dynamic=dynamic), x, kernel, reference


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_conv_kernels_match_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    model, wasm, x, _, _ = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({"input0": x})["output0"]
    np.testing.assert_allclose(got, model(x), rtol=1e-4, atol=1e-4)


def test_conv_kernels_match_torch_and_lower_to_the_rules_kernel(compiled) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    model, wasm, x, kernel, reference = compiled
    convs = {i.name for i in read_module(wasm).imports if i.name.startswith("f32_conv2d")}
    assert convs == {kernel}
    with runtime.load(wasm) as session:
        got = session.run({"input0": x})["output0"]
    with torch.no_grad():
        expected = reference(torch, torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_the_rule_on_resnet_and_detector_layers() -> None:
    # stride 2, small planes, many channels, pointwise convs and rows of 128 or more read in
    # place: the gemm; rows under 128 with few channels and depthwise convs: the direct
    # kernel
    assert runs_as_gemm(64, 128, (3, 3), (2, 2), (28, 28))
    assert runs_as_gemm(512, 512, (3, 3), (1, 1), (7, 7))
    assert runs_as_gemm(96, 96, (3, 3), (1, 1), (52, 52))
    assert runs_as_gemm(12, 24, (3, 3), (1, 1), (208, 208))
    assert not runs_as_gemm(24, 24, (3, 3), (1, 1), (104, 104))
    assert runs_as_gemm(64, 24, (3, 3), (1, 1), (128, 128))
    assert not runs_as_gemm(64, 24, (3, 3), (1, 1), (128, 128), padded=False)
    assert runs_as_gemm(144, 24, (1, 1), (1, 1), (56, 56))
    assert runs_as_gemm(24, 144, (1, 1), (1, 1), (56, 56))
    assert runs_as_gemm(16, 96, (1, 1), (1, 1), (112, 112))
    assert runs_as_gemm(1, 16, (1, 1), (1, 1), (112, 112))
    assert runs_as_gemm(320, 1280, (1, 1), (1, 1), (7, 7))
    assert not runs_as_gemm(1, 1, (3, 3), (2, 2), (28, 28))
    # a first conv on RGB runs on the gemm when it reads its input in place or phased (padded,
    # stride 2) with 32 output channels, else on the direct kernel's row tile; its 7x7 and
    # dilated forms on the gemm
    assert runs_as_gemm(3, 32, (3, 3), (2, 2), (112, 112))
    assert runs_as_gemm(3, 32, (3, 3), (1, 1), (56, 56))
    assert not runs_as_gemm(3, 32, (3, 3), (2, 2), (112, 112), padded=False)
    assert not runs_as_gemm(3, 32, (3, 3), (1, 1), (56, 16))
    assert not runs_as_gemm(3, 16, (3, 3), (2, 2), (112, 112))
    assert runs_as_gemm(3, 32, (3, 3), (2, 2), (7, 7))
    assert runs_as_gemm(3, 64, (7, 7), (2, 2), (112, 112))
    assert runs_as_gemm(4, 6, (3, 3), (1, 1), (5, 5), (2, 2))
