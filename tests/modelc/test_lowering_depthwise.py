"""Depthwise convs (``groups == c``) lower to the depthwise family, with their bias and
activation fused, and match eager nn on every kernel provider; a fused residual ``add``
keeps the general conv kernel."""

from __future__ import annotations

import numpy as np
import pytest
import wasmtime
from executors import PROVIDERS, Lambda

import modelc
import nn
import runtime
from nn import functional as F
from wasm_kernels import abi

RNG = np.random.default_rng(3)
W3 = RNG.standard_normal((8, 1, 3, 3)).astype(np.float32)
W5 = RNG.standard_normal((4, 1, 5, 5)).astype(np.float32)
BIAS = RNG.standard_normal(8).astype(np.float32)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _conv1d() -> nn.Module:
    layer = nn.Conv1d(4, 4, 5, padding=2, groups=4)
    layer.weight = nn.Parameter(_x(4, 1, 5))
    return layer


# name: (model, example input, dynamic axes, the conv kernel it must import)
CASES = {
    "relu6_stride2": (Lambda(lambda x: F.relu6(F.conv2d(x, W3, BIAS, stride=2, padding=1,
                                                        groups=8))),
                      _x(2, 8, 13, 10), {}, "f32_depthwise_conv2d_relu6"),
    "multiplier2_silu_dynamic_batch": (
        Lambda(lambda x: F.silu(F.conv2d(x, W3, None, padding=1, groups=4))),
        _x(3, 4, 7, 9), {"input0": {0: ("batch", 1, 4)}}, "f32_depthwise_conv2d_silu"),
    "5x5_dilated": (Lambda(lambda x: F.conv2d(x, W5, BIAS[:4], padding=4, dilation=2,
                                              groups=4)), _x(1, 4, 12, 12), {},
                    "f32_depthwise_conv2d"),
    "conv1d": (_conv1d(), _x(2, 4, 23), {}, "f32_depthwise_conv2d"),
    "residual_stays_general": (
        Lambda(lambda x: F.conv2d(x, W3, BIAS, padding=1, groups=8) + x), _x(1, 8, 6, 6), {},
        "f32_conv2d_add"),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    model, x, dynamic, kernel = CASES[request.param]
    return model, modelc.export(model, (x,), dynamic=dynamic), x, kernel


def test_depthwise_kernel_is_imported(compiled) -> None:  # type: ignore[no-untyped-def]
    _, wasm, _, kernel = compiled
    imported = {i.name for i in wasmtime.Module(wasmtime.Engine(), wasm).imports
                if i.module == abi.MODULE}
    assert kernel in imported
    assert not {k for k in imported if "conv2d" in k} - {kernel}


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_depthwise_matches_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    model, wasm, x, _ = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({"input0": x})["output0"]
    np.testing.assert_allclose(got, model(x), rtol=1e-4, atol=1e-4)
