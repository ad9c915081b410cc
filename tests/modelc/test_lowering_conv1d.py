"""1-D convolutions in wasm against eager nn on every kernel provider: ``nn.Conv1d`` and the
tall 2-D layout (width 1, a (k, 1) kernel), which conv2d lowers as the wide one (height 1),
with stride, dilation, padding, groups and fused epilogues."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import nn
import runtime
from nn import functional as F

RNG = np.random.default_rng(0)
W_TALL = RNG.standard_normal((6, 2, 3, 1)).astype(np.float32)
W_WIDE_KERNEL = RNG.standard_normal((4, 4, 3, 2)).astype(np.float32)
BIAS = RNG.standard_normal(6).astype(np.float32)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _conv1d() -> nn.Module:
    layer = nn.Conv1d(4, 6, 5, stride=2, padding=2, dilation=2, groups=2)
    layer.weight = nn.Parameter(_x(6, 2, 5))
    return layer


# name: (model, example input, {input: {axis: (dim, min, max)}})
CASES = {
    "conv1d_layer": (_conv1d(), _x(2, 4, 37), {"input0": {0: ("batch", 1, 3)}}),
    "tall": (Lambda(lambda x: F.conv2d(x, W_TALL, BIAS, stride=(2, 1), padding=(1, 0),
                                       groups=2)), _x(2, 4, 29, 1), {}),
    "tall_dilated_relu_residual": (
        Lambda(lambda x: F.relu(F.conv2d(x, W_TALL[:2], None, padding=(2, 0), dilation=(2, 1))
                                + x)), _x(2, 2, 19, 1), {}),
    "tall_input_wide_kernel_stays_2d": (Lambda(lambda x: F.conv2d(x, W_WIDE_KERNEL,
                                                                  padding=(1, 1))),
                                        _x(1, 4, 9, 1), {}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    model, x, dynamic = CASES[request.param]
    return model, modelc.export(model, (x,), dynamic=dynamic), x


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_conv1d_layouts_match_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    model, wasm, x = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({"input0": x})["output0"]
    np.testing.assert_allclose(got, model(x), rtol=1e-4, atol=1e-4)
