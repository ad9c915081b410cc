"""The composites added for ONNX breadth, compiled to wasm with a symbolic batch axis and
run on every kernel provider against eager nn (itself checked against torch in
tests/nn/test_functional.py): sub-pixel shuffles (permutes of at most 4 merged axes),
cumsum and triangles over constant matrices, argmax/argmin (int64, exact), rms_norm, and
the activation composites."""

from __future__ import annotations

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import runtime
from nn import functional as F

BATCH = {"input0": {0: ("batch", 1, 4)}}
RNG = np.random.default_rng(3)
WEIGHT = RNG.standard_normal(5).astype(np.float32)


def _x(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# name: (function, example input of batch 2)
CASES = {
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2) * 2.0, _x(2, 12, 3, 5)),
    "pixel_unshuffle": (lambda x: F.pixel_unshuffle(x, 2) + 1.0, _x(2, 3, 4, 6)),
    "channel_shuffle": (lambda x: F.channel_shuffle(x, 3) - x, _x(2, 6, 2, 3)),
    "cumsum_inner_and_last": (lambda x: F.cumsum(x, 1) + F.cumsum(x, -1), _x(2, 3, 5)),
    "triangles": (lambda x: F.triu(x, 1) - F.tril(x, -1) * 2.0, _x(2, 4, 5)),
    "rms_norm": (lambda x: F.rms_norm(x, (5,), WEIGHT, 1e-5), _x(2, 3, 5)),
    "activations": (lambda x: F.selu(x) + F.mish(x) + F.softplus(x, 2.0) + F.softsign(x)
                    + F.celu(x, 0.5) + F.softshrink(x, 0.5) + F.sign(x) + F.fmod(x, 0.7)
                    + F.sin(x) * F.cos(x) + F.floor(x) - F.ceil(x) + F.round(x),
                    _x(2, 3, 7, scale=4.0)),
    "log_softmax_inner": (lambda x: F.log_softmax(x, 1), _x(2, 4, 3)),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    fn, x = CASES[request.param]
    model = Lambda(fn)
    return model, modelc.export(model, (x,), dynamic=BATCH), x


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_composite_in_wasm_matches_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    model, wasm, x = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        for batch in (1, 3):
            inputs = np.concatenate([x, x])[:batch]
            got = session.run({"input0": inputs})["output0"]
            np.testing.assert_allclose(got, model(inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_argmax_argmin_in_wasm_are_exact(kernels: str) -> None:
    x = np.round(_x(2, 5, 6) * 1.5)  # ties
    model = Lambda(lambda t: (F.argmax(t, 1), F.argmin(t, -1, keepdim=True),
                              F.argmax(t, 2, select_last_index=True)))
    wasm = modelc.export(model, (x,), dynamic=BATCH)
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({"input0": x})
    for name, want in zip(sorted(got), model(x)):
        assert got[name].dtype == np.int64
        np.testing.assert_array_equal(got[name], want)


@pytest.mark.parametrize("call, message", [
    (lambda: F.pixel_shuffle(_x(1, 6, 2, 2), 2), "divisible by the square of upscale_factor"),
    (lambda: F.pixel_unshuffle(_x(1, 2, 3, 4), 2),
     r"height \(3\) and width \(4\) to be divisible by downscale_factor \(2\)"),
    (lambda: F.pixel_shuffle(_x(6, 2, 2), 2), r"expected 4-D \(N, C, H, W\) input"),
    (lambda: F.channel_shuffle(_x(1, 5, 2, 2), 2), "5 channels are not divisible by 2"),
    (lambda: F.cumsum(_x(2, 3), 2), "dim 2 is out of range for rank 2"),
    (lambda: F.triu(_x(3), 0), "at least 2 dimensions"),
    (lambda: F.argmax(_x(2, 3), -3), "dim -3 is out of range for rank 2"),
    (lambda: F.rms_norm(_x(2, 3), (4,)), r"does not end with normalized_shape \(4,\)"),
    (lambda: F.pixel_shuffle(_x(1, 4, 2, 2), 0), "the factor must be a positive int, got 0"),
])
def test_errors_name_the_offending_value(call, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("fn, message", [
    (lambda x: F.cumsum(x, 1), "cumsum over axis 1 needs a fixed size, got the symbolic 'seq'"),
    (lambda x: F.argmax(x, 1), "argmax over axis 1 needs a fixed size, got the symbolic 'seq'"),
])
def test_a_symbolic_axis_these_ops_read_whole_is_refused(fn, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        modelc.trace(Lambda(fn), (_x(2, 3, 4),), dynamic={"input0": {1: ("seq", 1, 8)}})
