"""``peers.py``'s ``real`` group: the real models of ``tests/cases/real_models.py`` (ONNX files
inside pinned PyPI wheels and npm packages), prepared for the same cells as the other models.

A real model has no torch twin: its ``.onnx`` file is what onnxruntime and ORT-web run, the
wasmnn row is that file imported by ``modelc.from_onnx``, and the reference output is
onnxruntime's (one thread). Packages are downloaded once into ``$WASMNN_MODEL_CACHE``, else
the folder the tests use (``.pytest_cache/d/real_models``); offline, every cell of the model
prints ``n/a``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "cases"))

from real_models import MODELS, ModelUnavailable, fetch  # noqa: E402

NAMES = sorted(MODELS)
"""The models of the group, in table order of ``--models real``."""

NOT_APPLICABLE = {"wasmnn-onnx": "the wasmnn row runs the ONNX file",
                  "torch": "no torch model"}


def inputs(name: str) -> Callable[[], dict[str, np.ndarray]]:
    """The seeded inputs of real model ``name`` (the tests' seed)."""
    return lambda: MODELS[name].inputs(np.random.default_rng(0))


def _cache() -> Path:
    configured = os.environ.get("WASMNN_MODEL_CACHE")
    return Path(configured) if configured else ROOT / ".pytest_cache" / "d" / "real_models"


def path(name: str) -> Path:
    """The ``.onnx`` file of real model ``name``, fetched into the cache on first use.

    Raises:
        ModelUnavailable: offline, or the pinned wheel is gone.
    """
    return fetch(MODELS[name], _cache())


def prepare(name: str, workdir: Path, feeds: dict[str, np.ndarray]) -> dict[str, str]:
    """Write ``model.onnx``, onnxruntime's ``expected.npy`` (first output) and ``model.wasm``
    into ``workdir``; return what failed, by runtime."""
    import onnxruntime as ort

    import modelc

    try:
        source = path(name)
    except ModelUnavailable as error:
        reason = str(error).splitlines()[0][:160]
        return dict.fromkeys(("wasmnn", "wasmnn-onnx", "ort", "ortweb", "torch"), reason)
    shutil.copyfile(source, workdir / "model.onnx")
    for data in source.parent.glob(f"{source.name}.*"):  # external data, by its own name
        shutil.copyfile(data, workdir / data.name)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(workdir / "model.onnx"), options,
                                   providers=["CPUExecutionProvider"])
    np.save(workdir / "expected.npy", session.run(None, feeds)[0])
    failed = dict(NOT_APPLICABLE)
    try:
        graph = modelc.from_onnx(str(workdir / "model.onnx"),
                                 input_shapes={k: v.shape for k, v in feeds.items()})
        modelc.export(graph, None, workdir / "model.wasm")
    except Exception as error:  # noqa: BLE001 - reported in the table
        failed["wasmnn"] = f"{type(error).__name__}: {error}".splitlines()[0][:160]
    return failed
