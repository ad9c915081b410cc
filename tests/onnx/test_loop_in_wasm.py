"""Loop with a trip count known only at run time (or over the unroll limit) and Scan over a
symbolic sequence axis, compiled to one wasm loop over a body compiled once, compared with
onnxruntime on the interpreter and on every kernel provider; and their refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from executors import PROVIDERS

import modelc

sys.path.insert(0, str(Path(__file__).parent))
from test_control_flow import F, info, model, ort_run

onnx = pytest.importorskip("onnx")
runtime = pytest.importorskip("runtime")
from onnx import TensorProto, helper, numpy_helper

I64 = TensorProto.INT64


def counting_body(cond: str = "c_in") -> onnx.GraphProto:
    """``acc = acc * 0.5 + i + w`` (``w`` from the outer scope), ``total += i`` (int64);
    the condition ``cond`` goes out."""
    nodes = [helper.make_node("Cast", ["i"], ["fi"], to=F),
             helper.make_node("Mul", ["acc_in", "half"], ["scaled"]),
             helper.make_node("Add", ["scaled", "fi"], ["shifted"]),
             helper.make_node("Add", ["shifted", "w"], ["acc_out"]),
             helper.make_node("Add", ["total_in", "i"], ["total_out"]),
             helper.make_node("Identity", [cond], ["c_out"])]
    return helper.make_graph(nodes, "body", [
        info("i", I64, []), info("c_in", TensorProto.BOOL, []), info("acc_in", F, [2, 3]),
        info("total_in", I64, [])], [info("c_out", TensorProto.BOOL, []),
                                     info("acc_out", F, [2, 3]), info("total_out", I64, [])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "half")])


def counting_loop(trip: np.ndarray | None = None) -> onnx.ModelProto:
    """The counting body run ``trip`` times (a graph input when None)."""
    inits = [] if trip is None else [numpy_helper.from_array(trip, "trip")]
    inputs = ([] if trip is not None else [info("trip", I64, [])]) + [
        info("acc0", F, [2, 3]), info("total0", I64, []), info("w", F, [2, 3])]
    return model([helper.make_node("Loop", ["trip", "", "acc0", "total0"], ["acc", "total"],
                                   body=counting_body())],
                 inputs, [info("acc", F, [2, 3]), info("total", I64, [])], inits)


def _feeds(rng: np.random.Generator, **extra: np.ndarray) -> dict[str, np.ndarray]:
    return {"acc0": rng.standard_normal((2, 3)).astype(np.float32),
            "total0": np.array(7, np.int64), "w": rng.standard_normal((2, 3)).astype(np.float32),
            **extra}


def _compare(got: dict[str, np.ndarray], want: list[np.ndarray], names: list[str]) -> None:
    for name, expected in zip(names, want):
        assert got[name].shape == expected.shape, name
        np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_loop_with_a_run_time_trip_count_runs_as_a_wasm_loop(kernels: str) -> None:
    proto = counting_loop()
    graph = modelc.from_onnx(proto)
    assert graph.ops() == ["loop"]
    rng = np.random.default_rng(5)
    with runtime.load(modelc.export(graph), kernels=kernels) as session:
        for trip in (0, 1, 4, 300, -2):
            inputs = _feeds(rng, trip=np.array(trip, np.int64))
            want = ort_run(proto, inputs)
            _compare(session.run(inputs), want, ["acc", "total"])
            _compare(modelc.interpret(graph, inputs), want, ["acc", "total"])


@pytest.mark.parametrize("kernels", ["relaxed", "host"])
def test_loop_over_the_unroll_limit_stacks_its_scan_outputs(kernels: str) -> None:
    """A known trip count of 300 (over ``MAX_UNROLL``) fixes the stacked output's length."""
    body = counting_body()
    body.node.append(helper.make_node("Sigmoid", ["acc_out"], ["step"]))
    body.output.append(info("step", F, [2, 3]))
    proto = model([helper.make_node("Loop", ["trip", "", "acc0", "total0"],
                                    ["acc", "total", "steps"], body=body)],
                  [info("acc0", F, [2, 3]), info("total0", I64, []), info("w", F, [2, 3])],
                  [info("acc", F, [2, 3]), info("total", I64, []),
                   info("steps", F, [300, 2, 3])],
                  [numpy_helper.from_array(np.array(300, np.int64), "trip")])
    graph = modelc.from_onnx(proto)
    assert graph.ops() == ["loop"]
    inputs = _feeds(np.random.default_rng(6))
    with runtime.load(modelc.export(graph), kernels=kernels) as session:
        _compare(session.run(inputs), ort_run(proto, inputs), ["acc", "total", "steps"])


def scan_model(axis: int, backwards: int, out_axis: int) -> onnx.ModelProto:
    """``s = (s + x_t) @ W; y_t = tanh(s)`` over a symbolic ``seq`` axis ``axis`` of x,
    read backwards when ``backwards``, y stacked on ``out_axis``; ``W`` is a graph input
    the body reads from the outer scope."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["mixed"]),
         helper.make_node("MatMul", ["mixed", "W"], ["s_out"]),
         helper.make_node("Tanh", ["s_out"], ["y_t"])], "body",
        [info("s_in", F, [1, 4]), info("x_t", F, [1, 4])],
        [info("s_out", F, [1, 4]), info("y_t", F, [1, 4])])
    x_shape: list = [1, 4]
    x_shape.insert(axis, "seq")
    y_shape: list = [1, 4]
    y_shape.insert(out_axis, "seq")
    return model([helper.make_node("Scan", ["s0", "X"], ["s", "Y"], body=body,
                                   num_scan_inputs=1, scan_input_axes=[axis],
                                   scan_input_directions=[backwards],
                                   scan_output_axes=[out_axis])],
                 [info("s0", F, [1, 4]), info("X", F, x_shape), info("W", F, [4, 4])],
                 [info("s", F, [1, 4]), info("Y", F, y_shape)])


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("axis, backwards, out_axis", [(0, 0, 0), (1, 1, 1), (0, 1, 2)])
def test_scan_over_a_symbolic_axis_runs_as_a_wasm_loop(axis: int, backwards: int,
                                                       out_axis: int, kernels: str) -> None:
    proto = scan_model(axis, backwards, out_axis)
    graph = modelc.from_onnx(proto)
    assert "loop" in graph.ops()
    rng = np.random.default_rng(7)
    with runtime.load(modelc.export(graph), kernels=kernels) as session:
        for length in (1, 5, 300):
            shape = [1, 4]
            shape.insert(axis, length)
            inputs = {"s0": rng.standard_normal((1, 4)).astype(np.float32),
                      "X": rng.standard_normal(shape).astype(np.float32),
                      "W": (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)}
            want = ort_run(proto, inputs)
            _compare(session.run(inputs), want, ["s", "Y"])
            _compare(modelc.interpret(graph, inputs), want, ["s", "Y"])


def test_a_loop_condition_computed_at_run_time_is_refused() -> None:
    body = counting_body(cond="keep_going")
    body.node.insert(0, helper.make_node("Less", ["i", "five"], ["keep_going"]))
    body.initializer.append(numpy_helper.from_array(np.array(5, np.int64), "five"))
    proto = model([helper.make_node("Loop", ["trip", "", "acc0", "total0"], ["acc", "total"],
                                    body=body)],
                  [info("trip", I64, []), info("acc0", F, [2, 3]), info("total0", I64, []),
                   info("w", F, [2, 3])], [info("acc", F, [2, 3]), info("total", I64, [])])
    with pytest.raises(modelc.CompileError, match=r"'Loop_0' \(Loop\): the body computes its "
                                                  r"loop condition at run time"):
        modelc.from_onnx(proto)


def test_a_state_that_changes_shape_is_refused() -> None:
    body = helper.make_graph(
        [helper.make_node("Concat", ["s_in", "x_t"], ["s_out"], axis=0),
         helper.make_node("Identity", ["x_t"], ["y_t"])], "body",
        [info("s_in", F, [2]), info("x_t", F, [2])],
        [info("s_out", F, [4]), info("y_t", F, [2])])
    proto = model([helper.make_node("Scan", ["s0", "X"], ["s", "Y"], body=body,
                                    num_scan_inputs=1)],
                  [info("s0", F, [2]), info("X", F, ["seq", 2])],
                  [info("s", F, [2]), info("Y", F, ["seq", 2])])
    with pytest.raises(modelc.CompileError, match=r"loop-carried value 0 starts as "
                                                  r"float32\[2\] and the body makes it "
                                                  r"float32\[4\]"):
        modelc.from_onnx(proto)
