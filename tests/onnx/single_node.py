"""Helpers of the one-node ONNX op tests: operands (``Run`` marks a graph input, a plain
array is an initializer), seeded values, the one-node model, and a run in wasm beside
onnxruntime."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper

_rng = np.random.default_rng(0)


@dataclass
class Run:
    """A graph input (given at run time); a plain ndarray operand is an initializer."""

    array: np.ndarray


def r(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(np.float32)


def i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def f32(value: float) -> np.ndarray:
    return np.array(value, np.float32)


def bools(*shape: int) -> np.ndarray:
    return _rng.random(shape) < 0.5


def ties(*shape: int) -> np.ndarray:
    """Floats from a few values, so that comparisons meet equal pairs, NaN and infinities."""
    return _rng.choice(np.array([-1.0, 0.0, 2.5, np.nan, np.inf], np.float32), shape)


def ints(dtype: type, *shape: int) -> np.ndarray:
    """Integers from a few values (so equal pairs occur), signed extremes among them."""
    info = np.iinfo(dtype)
    return _rng.choice(np.array([info.min, -3, 0, 2, 5, info.max], dtype), shape)


def single_node(op: str, operands: list[Any], attrs: dict[str, Any], opset: int,
                outputs: int = 1) -> tuple[Any, dict[str, np.ndarray]]:
    """A one-node model and its run-time inputs."""
    names, inits, infos, feeds = [], [], [], {}
    for i, operand in enumerate(operands):
        name = "" if operand is None else f"in{i}"
        names.append(name)
        if isinstance(operand, Run):
            feeds[name] = operand.array
            elem = helper.np_dtype_to_tensor_dtype(operand.array.dtype)
            infos.append(helper.make_tensor_value_info(name, elem, operand.array.shape))
        elif operand is not None:
            inits.append(numpy_helper.from_array(operand, name))
    outs = [f"out{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, name=f"the_{op.lower()}", **attrs)
    graph = helper.make_graph([node], "case", infos, [
        helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outs],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)  # onnxruntime reads IR <= 13
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    return model, feeds


def wasm_and_onnxruntime(spec: tuple, kernels: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(wasm output, onnxruntime output)`` pairs of the single-node model ``spec`` run on
    the kernel provider ``kernels``."""
    import modelc
    import runtime

    ort = pytest.importorskip("onnxruntime")
    model, feeds = single_node(*spec)
    wants = ort.InferenceSession(model.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, feeds)
    with runtime.load(modelc.export(modelc.from_onnx(model)), kernels=kernels) as session:
        gots = list(session.run(feeds).values())
    assert len(gots) == len(wants)
    return list(zip(gots, wants))
