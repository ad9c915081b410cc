"""Helpers for the ONNX import tests: export from torch, run onnxruntime, compare.

onnx, onnxruntime and torch are test extras; every test here skips without them.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def assert_close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Within 1e-4 relative to the largest magnitude of ``want``."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-6)
    err = float(np.abs(got.astype(np.float64) - want).max(initial=0.0))
    assert err <= 1e-4 * scale, f"{what}: max error {err:.3g} vs max |ref| {scale:.3g}"


def ort_run(model: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    data = model if isinstance(model, bytes) else model.SerializeToString()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, dict(inputs))))


@pytest.fixture
def close() -> Callable[[np.ndarray, np.ndarray, str], None]:
    """``assert_close``, for tests that make their own reference."""
    return assert_close


@pytest.fixture
def check_against_ort() -> Callable[..., modelc.Graph]:
    """``check(model, [inputs, ...], **from_onnx_kwargs)``: import, optimise, and compare
    the interpreter with onnxruntime on every input set; returns the optimised graph."""
    def check(model: Any, input_sets: list[Mapping[str, np.ndarray]],
              **kwargs: Any) -> modelc.Graph:
        graph = modelc.optimize(modelc.from_onnx(model, **kwargs))
        for inputs in input_sets:
            want = ort_run(model, inputs)
            got = modelc.interpret(graph, inputs)
            assert sorted(got) == sorted(want)
            for name in want:
                assert_close(got[name], want[name], name)
        return graph
    return check


@pytest.fixture
def check_wasm_against_ort() -> Callable[..., None]:
    """``check(model, inputs)``: export to wasm and compare a run on every kernel provider
    (both SIMD variants, scalar, host) with onnxruntime."""
    runtime = pytest.importorskip("runtime")

    def check(model: Any, inputs: Mapping[str, np.ndarray]) -> None:
        want = ort_run(model, inputs)
        wasm = modelc.export(modelc.from_onnx(model))
        for kernels in PROVIDERS:
            with runtime.load(wasm, kernels=kernels) as session:
                got = session.run(dict(inputs))
            assert sorted(got) == sorted(want)
            for name in want:
                assert_close(got[name], want[name], f"{name} on {kernels}")
    return check


@pytest.fixture
def torch_to_onnx() -> Callable[..., bytes]:
    """``export(module, args, input_names, output_names, dynamic_axes, opset)``: the
    module exported by torch's TorchScript exporter (the dynamo one needs onnxscript)."""
    torch = pytest.importorskip("torch")

    def export(module: Any, args: tuple, input_names: list[str], output_names: list[str],
               dynamic_axes: dict | None = None, opset: int = 13, **kwargs: Any) -> bytes:
        out = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module.eval(), args, out, dynamo=False,
                              input_names=input_names, output_names=output_names,
                              dynamic_axes=dynamic_axes or {}, opset_version=opset, **kwargs)
        return out.getvalue()
    return export


@pytest.fixture
def compare_with_ort() -> Callable[[Mapping[str, np.ndarray], Any, Mapping[str, np.ndarray], str],
                                   None]:
    """``compare(got, model, inputs, what)``: every output in ``got`` within 1e-4 relative of
    onnxruntime's run of ``model`` on ``inputs``."""
    def compare(got: Mapping[str, np.ndarray], model: Any, inputs: Mapping[str, np.ndarray],
                what: str) -> None:
        want = ort_run(model, inputs)
        assert sorted(got) == sorted(want), what
        for name in want:
            assert_close(got[name], want[name], f"{name}: {what}")
    return compare
