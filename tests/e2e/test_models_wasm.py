"""The #5 model set compiled to wasm, against eager nn within 1e-4 relative, at two values
of each symbolic dim, on every kernel provider."""

import numpy as np
import pytest
from executors import PROVIDERS
from models import MODEL_CASES

import modelc
import runtime


@pytest.fixture(scope="module", params=sorted(MODEL_CASES))
def compiled(request):
    build, example_shape, dynamic, run_shapes = MODEL_CASES[request.param]
    model = build()
    try:
        wasm = modelc.export(model, (np.zeros(example_shape, np.float32),),
                             dynamic={"input0": dynamic})
    except modelc.CompileError as err:
        pytest.skip(f"{request.param} does not lower to wasm yet: {err}")
    return model, wasm, run_shapes


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_model_matches_eager(compiled, kernels):
    model, wasm, run_shapes = compiled
    rng = np.random.default_rng(3)
    with runtime.load(wasm, kernels=kernels) as session:
        for shape in run_shapes:
            x = rng.standard_normal(shape).astype(np.float32)
            got, ref = session.run(x)["output0"], model(x)
            assert got.shape == ref.shape
            assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max()
