"""conv2d on a small plane lowered as the transposed product (``modelc/ops/_conv_rows.py``:
channels-last input, ``qu8_im2col`` on 4-byte taps, the ``f32_linear`` tile with the conv's
bias and epilogue, the rows transposed back), against eager nn and torch on every kernel
provider: stride, padding, dilation, an even kernel, a tall 1-D conv, no bias, a residual
add, an activation and a dynamic batch."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import runtime
from modelc.ops._conv_rows import runs_transposed
from nn import functional as F
from wasm_kernels.wasm import read_module

RNG = np.random.default_rng(2)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


W = _x(128, 32, 3, 3)
W_SQUARE = _x(128, 128, 3, 3)
W_EVEN = _x(160, 24, 4, 4)
W_TALL = _x(256, 64, 3, 1)
BIAS = _x(256)

# name: (model, example input, dynamic axes, the linear kernel, torch's version)
CASES = {
    "stride2_relu_batch": (
        Lambda(lambda x: F.relu(F.conv2d(x, W, BIAS[:128], stride=2, padding=1))),
        _x(2, 32, 13, 11), {"input0": {0: ("batch", 1, 3)}}, "f32_linear_bias_relu",
        lambda t, x: t.relu(t.nn.functional.conv2d(x, t.tensor(W), t.tensor(BIAS[:128]),
                                                   stride=2, padding=1))),
    "stride2_residual_relu": (
        Lambda(lambda x: (lambda r: F.relu(F.conv2d(x, W_SQUARE, BIAS[:128], stride=2,
                                                    padding=1) + r))(F.max_pool2d(x, 2))),
        _x(1, 128, 18, 18), {}, "f32_linear_bias_add_relu",
        lambda t, x: t.relu(t.nn.functional.conv2d(x, t.tensor(W_SQUARE), t.tensor(BIAS[:128]),
                                                   stride=2, padding=1)
                            + t.nn.functional.max_pool2d(x, 2))),
    "dilated_no_bias_silu": (
        Lambda(lambda x: F.silu(F.conv2d(x, W, None, padding=2, dilation=2))),
        _x(1, 32, 7, 9), {}, "f32_linear_silu",
        lambda t, x: t.nn.functional.silu(t.nn.functional.conv2d(x, t.tensor(W), None,
                                                                 padding=2, dilation=2))),
    "same_even_kernel": (
        Lambda(lambda x: F.conv2d(x, W_EVEN, BIAS[:160], padding="same")),
        _x(1, 24, 6, 5), {}, "f32_linear_bias",
        lambda t, x: t.nn.functional.conv2d(x, t.tensor(W_EVEN), t.tensor(BIAS[:160]),
                                            padding="same")),
    "tall_1d": (
        Lambda(lambda x: F.conv2d(x, W_TALL, BIAS, stride=(2, 1), padding=(1, 0))),
        _x(1, 64, 40, 1), {}, "f32_linear_bias",
        lambda t, x: t.nn.functional.conv2d(x, t.tensor(W_TALL), t.tensor(BIAS), stride=(2, 1),
                                            padding=(1, 0))),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    model, x, dynamic, kernel, reference = CASES[request.param]
    return model, modelc.export(model, (x,), dynamic=dynamic, winograd=False), x, kernel, \
        reference


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_transposed_convs_match_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    model, wasm, x, _, _ = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({"input0": x})["output0"]
        if x.shape[0] > 1:  # the dynamic batch at one image too
            np.testing.assert_allclose(session.run({"input0": x[:1]})["output0"], model(x[:1]),
                                       rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, model(x), rtol=1e-4, atol=1e-4)


def test_transposed_convs_match_torch_and_run_the_linear(compiled) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    model, wasm, x, kernel, reference = compiled
    imports = {i.name for i in read_module(wasm).imports}
    assert not {name for name in imports if name.startswith("f32_conv2d")}
    assert {kernel, "qu8_im2col", "f32_mul"} <= imports
    with runtime.load(wasm) as session:
        got = session.run({"input0": x})["output0"]
    with torch.no_grad():
        expected = reference(torch, torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_the_rule_on_real_model_layers() -> None:
    # open_nsfw / ResNet's strided 3x3 to 7x7, NudeNet's 128 -> 256/2 @20 (10x10),
    # ddddocr's 192 -> 384/2 @26 (13x13): rows
    assert runs_transposed(128, 256, (3, 3), (7, 7), 1)
    assert runs_transposed(128, 256, (3, 3), (10, 10), 1)
    assert runs_transposed(16, 256, (3, 3), (7, 7), 1)
    assert runs_transposed(192, 384, (3, 3), (13, 13), 1)
    # planes of 196 and more, pointwise and grouped convs, little work: the conv kernels
    assert not runs_transposed(128, 256, (3, 3), (14, 14), 1)
    assert not runs_transposed(512, 2048, (1, 1), (7, 7), 1)
    assert not runs_transposed(16, 16, (3, 3), (7, 7), 16)
    assert not runs_transposed(32, 32, (3, 3), (8, 8), 1)


def test_transposed_convs_on_two_threads(compiled) -> None:  # type: ignore[no-untyped-def]
    # the linear splits its rows between the threads; the transposes and the im2col do not
    model, wasm, x, _, _ = compiled
    with runtime.load(wasm, threads=2) as session:
        got = session.run({"input0": x})["output0"]
    np.testing.assert_allclose(got, model(x), rtol=1e-4, atol=1e-4)
