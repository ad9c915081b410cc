"""Small models, where per-call overhead decides: the digits MLP and a one-op model.

Used by ``embedding.py --small``. The digits MLP (64 -> 128 -> 64 -> 10, the shipped weights of
``examples/digits``) runs at batch 1, 32 and 450 (the demo's test split) in wasmnn, in eager
``nn`` (numpy, OpenBLAS on one thread when threadpoolctl is there) and in onnxruntime (one
thread, the same weights as Gemm + Relu nodes); a model of one ReLU on 4 floats gives each
runtime's cost per call. Every contender is timed in interleaved rounds in thread CPU time
(``time.thread_time``), and the figure is the median of the rounds' per-call times.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BATCHES = (1, 32, 450)


def digits_model() -> Any:
    sys.path.insert(0, str(ROOT / "examples" / "digits"))
    from model import load_trained

    return load_trained()


def onnx_mlp(model: Any) -> bytes:
    """The ``nn.Sequential`` of Linear/ReLU ``model`` as ONNX Gemm (transB) and Relu nodes."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, last = [], [], "x"
    for index, layer in enumerate(model):
        out = f"h{index}"
        if type(layer).__name__ == "Linear":
            weight, bias = f"w{index}", f"b{index}"
            inits += [numpy_helper.from_array(np.asarray(layer.weight), weight),
                      numpy_helper.from_array(np.asarray(layer.bias), bias)]
            nodes.append(helper.make_node("Gemm", [last, weight, bias], [out], transB=1))
        else:
            nodes.append(helper.make_node("Relu", [last], [out]))
        last = out
    width_in, width_out = model[0].weight.shape[1], model[-1].weight.shape[0]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", width_in])],
        [helper.make_tensor_value_info(last, TensorProto.FLOAT, ["n", width_out])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def onnx_relu() -> bytes:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _ort(model: bytes) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def interleaved(contenders: dict[str, Callable[[], Any]], calls: int,
                rounds: int) -> dict[str, float]:
    """Median per-call thread CPU time in microseconds, contenders timed in turn per round."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds + 1):  # NOTE: the first round warms up and is dropped
        for name, call in contenders.items():
            start = time.thread_time()
            for _ in range(calls):
                call()
            times[name].append(1e6 * (time.thread_time() - start) / calls)
    return {name: statistics.median(t[1:]) for name, t in times.items()}


def _one_thread() -> Any:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(1)


def measure(rounds: int) -> list[tuple[str, dict[str, float]]]:
    """Rows of (what, {runtime: us per call}), checking every runtime's outputs agree."""
    import modelc
    import nn
    import runtime

    model = digits_model()
    rng = np.random.default_rng(0)
    limit = _one_thread()
    rows = []
    wasm = modelc.export(model, {"pixels": np.zeros((1, 64), np.float32)},
                         dynamic={"pixels": {0: ("batch", 1, 1024)}})
    ort_mlp = _ort(onnx_mlp(model))
    with runtime.load(wasm, instances=1) as session:
        for batch in BATCHES:
            x = rng.random((batch, 64), np.float32)
            want = model(x)
            for got in (session.run({"pixels": x})["output0"],
                        ort_mlp.run(None, {"x": x})[0]):
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
            calls = max(20, 4000 // batch)
            rows.append((f"digits MLP, batch {batch}", interleaved({
                "wasmnn": lambda x=x: session.run({"pixels": x}),
                "numpy": lambda x=x: model(x),
                "onnxruntime": lambda x=x: ort_mlp.run(None, {"x": x})}, calls, rounds)))
    relu = nn.ReLU()
    x = rng.standard_normal((1, 4)).astype(np.float32)
    ort_relu = _ort(onnx_relu())
    with runtime.load(modelc.export(relu, {"x": x}), instances=1) as session:
        np.testing.assert_array_equal(session.run(x)["output0"], relu(x))
        rows.append(("one ReLU on 4 floats (per-call cost)", interleaved({
            "wasmnn": lambda: session.run({"x": x}), "numpy": lambda: relu(x),
            "onnxruntime": lambda: ort_relu.run(None, {"x": x})}, 4000, rounds)))
    if limit is not None:
        limit.unregister()
    return rows


def print_rows(rows: list[tuple[str, dict[str, float]]]) -> None:
    print("| model | wasmnn us | eager numpy us | onnxruntime us | wasmnn / numpy | "
          "wasmnn / onnxruntime |\n| --- | --- | --- | --- | --- | --- |")
    for what, t in rows:
        print(f"| {what} | {t['wasmnn']:.1f} | {t['numpy']:.1f} | {t['onnxruntime']:.1f} | "
              f"{t['wasmnn'] / t['numpy']:.2f}x | {t['wasmnn'] / t['onnxruntime']:.2f}x |")
