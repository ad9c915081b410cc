"""Accuracy of real-sized int8 models in WebAssembly against their float32 selves (issue #14):
all-MiniLM-L6-v2 quantized dynamically (sentence embeddings, cosine >= 0.99) and ResNet-18
quantized statically on 32 calibration images (its features on 200 random inputs). Both
are slow: set ``WASMNN_SLOW=1``."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import modelc
import nn
import runtime

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not os.environ.get("WASMNN_SLOW"), reason="compiles and runs real-sized models; set "
                                              "WASMNN_SLOW=1")]


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_minilm_int8_dynamic_embeddings_keep_cosine_099(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    sys.path.insert(0, str(ROOT / "examples" / "minilm"))
    try:
        from sentence_encoder import SentenceEncoder, find_minilm, load_tokenizer, tokenize
        from similarity import SENTENCES
    finally:
        sys.path.remove(str(ROOT / "examples" / "minilm"))
    try:
        checkpoint = find_minilm(tmp_path / "minilm")
    except ModuleNotFoundError as error:
        pytest.skip(str(error))
    batch = tokenize(load_tokenizer(checkpoint, 128), SENTENCES)
    encoder = SentenceEncoder.from_pretrained(checkpoint)
    graph = modelc.quantize(encoder, [batch], activations="dynamic")
    assert "qlinear" in graph.ops() and "linear" not in graph.ops()
    with runtime.load(modelc.export(graph), max_memory="512MiB", timeout=120.0) as session:
        got = session.run(batch)["output0"]
    assert _cosines(got, np.asarray(encoder(**batch))).min() >= 0.99


def _bench_models() -> ModuleType:
    """``bench/models.py``: ResNet-18 written once for ``nn`` and ``torch.nn``."""
    spec = importlib.util.spec_from_file_location("bench_models", ROOT / "bench" / "models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_resnet18_int8_static_keeps_its_features() -> None:
    """ResNet-18 with torch's random initialisation (no trained weights offline) quantized
    on 32 calibration images: its pooled features on 200 random inputs stay within int8's
    noise of float32 (signal-to-noise >= 30 dB; one int8 rounding of a full-range tensor is
    ~40 dB, each layer here measured 35-39 dB).

    NOTE: the issue's top-1 agreement (>= 95%) needs trained weights. An untrained network's
    features share one large mean direction (its argmax is one class for every input), and
    a head reading their small deviations from that mean has top-1 margins below one int8
    step: rounding only the pooled features to int8 already moves 12-16% of the top-1
    classes, so the agreement is printed here, not asserted."""
    torch: Any = pytest.importorskip("torch")
    models = _bench_models()
    torch.manual_seed(0)
    reference = models.resnet18(torch.nn)
    models.randomize_batchnorm(reference)
    reference.eval()
    reference.fc = torch.nn.Identity()  # the output is the (B, 512) pooled features
    rng = np.random.default_rng(0)
    calibration = rng.standard_normal((32, 3, 224, 224)).astype(np.float32)
    inputs = rng.standard_normal((200, 3, 224, 224)).astype(np.float32)
    with torch.no_grad():
        expected = np.concatenate([reference(torch.from_numpy(inputs[i:i + 50])).numpy()
                                   for i in range(0, 200, 50)])
    model = models.resnet18(nn)
    model.fc = nn.Identity()
    model = models.transfer(reference, model)
    graph = modelc.quantize(model, [calibration[i:i + 4] for i in range(0, 32, 4)],
                            dynamic={"input0": {0: ("batch", 1, 8)}})
    assert {"qconv2d", "qadd"} <= set(graph.ops())
    with runtime.load(modelc.export(graph), max_memory="1GiB", timeout=900.0) as session:
        got = np.concatenate([session.run({"input0": inputs[i:i + 8]})["output0"]
                              for i in range(0, 200, 8)])
    snr = 10 * np.log10((expected ** 2).mean() / ((got - expected) ** 2).mean())
    head = np.random.default_rng(1).standard_normal((1000, 512)) / expected.std(0).mean()
    agreement = ((got - expected.mean(0)) @ head.T).argmax(1) == (
        (expected - expected.mean(0)) @ head.T).argmax(1)
    print(f"ResNet-18 int8 pooled features: {snr:.1f} dB; top-1 agreement of a centred "
          f"random head: {agreement.mean():.3f}")
    assert snr >= 30
