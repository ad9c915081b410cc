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


def while_loop(trip: bool, cond: bool) -> onnx.ModelProto:
    """The counting body, going on while ``i < 5`` and ``total < 40``: with a run-time trip
    count input ``trip`` and a run-time start condition ``go`` when asked."""
    body = counting_body(cond="keep_going")
    nodes = [*body.node[:-1], helper.make_node("Less", ["i", "five"], ["early"]),
             helper.make_node("Less", ["total_out", "forty"], ["small"]),
             helper.make_node("And", ["early", "small"], ["keep_going"]), body.node[-1]]
    inits = [*body.initializer, numpy_helper.from_array(np.array(5, np.int64), "five"),
             numpy_helper.from_array(np.array(40, np.int64), "forty")]
    onnx_body = helper.make_graph(nodes, "body", body.input, body.output, inits)
    inputs = ([info("trip", I64, [])] if trip else []) + (
        [info("go", TensorProto.BOOL, [])] if cond else []) + [
        info("acc0", F, [2, 3]), info("total0", I64, []), info("w", F, [2, 3])]
    return model([helper.make_node("Loop", ["trip" if trip else "", "go" if cond else "",
                                            "acc0", "total0"], ["acc", "total"],
                                   body=onnx_body)],
                 inputs, [info("acc", F, [2, 3]), info("total", I64, [])])


@pytest.mark.parametrize("kernels", ["relaxed", "scalar", "host"])
@pytest.mark.parametrize("trip, cond", [(True, False), (False, False), (True, True)])
def test_a_loop_stopped_by_a_run_time_condition_runs_as_a_wasm_loop(trip: bool, cond: bool,
                                                                    kernels: str) -> None:
    proto = while_loop(trip, cond)
    graph = modelc.from_onnx(proto)
    assert "loop" in graph.ops()
    rng = np.random.default_rng(9)
    with runtime.load(modelc.export(graph), kernels=kernels) as session:
        for count, start, total in ((3, True, 0), (9, True, 0), (9, True, 38), (9, False, 0)):
            extra = {"trip": np.array(count, np.int64)} if trip else {}
            if cond:
                extra["go"] = np.array(start)
            inputs = _feeds(rng, **extra)
            inputs["total0"] = np.array(total, np.int64)
            want = ort_run(proto, inputs)
            _compare(session.run(inputs), want, ["acc", "total"])
            _compare(modelc.interpret(graph, inputs), want, ["acc", "total"])


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


def test_swapped_states_are_refused() -> None:
    body = helper.make_graph(
        [helper.make_node("Identity", ["b_in"], ["a_out"]),
         helper.make_node("Identity", ["a_in"], ["b_out"])], "body",
        [info("a_in", F, [2]), info("b_in", F, [2]), info("x_t", F, [2])],
        [info("a_out", F, [2]), info("b_out", F, [2])])
    proto = model([helper.make_node("Scan", ["a0", "b0", "X"], ["a", "b"], body=body,
                                    num_scan_inputs=1)],
                  [info("a0", F, [2]), info("b0", F, [2]), info("X", F, ["seq", 2])],
                  [info("a", F, [2]), info("b", F, [2])])
    with pytest.raises(modelc.CompileError, match=r"loop state 0 becomes the body input .* "
                                                  r"\(a swap of states\?\)"):
        modelc.from_onnx(proto)


@pytest.mark.parametrize("kernels", ["relaxed", "scalar", "host"])
def test_a_scan_with_a_run_time_if_nested_in_a_run_time_loop(kernels: str) -> None:
    """Loop(M) over a Scan down ``X`` (symbolic rows, from the outer scope) whose step is
    a run-time If: ``s += x_t`` where ``sum(x_t) > 0``, else ``s *= 0.5``."""
    then = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["a"])], "then", [],
                             [info("a", F, [3])])
    other = helper.make_graph([helper.make_node("Mul", ["s_in", "half"], ["b"])], "else",
                              [], [info("b", F, [3])])
    step = helper.make_graph(
        [helper.make_node("ReduceSum", ["x_t"], ["total"], keepdims=0),
         helper.make_node("Greater", ["total", "zero"], ["positive"]),
         helper.make_node("If", ["positive"], ["s_out"], then_branch=then, else_branch=other),
         helper.make_node("Identity", ["s_out"], ["y"])], "step",
        [info("s_in", F, [3]), info("x_t", F, [3])], [info("s_out", F, [3]), info("y", F, [3])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
         numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    body = helper.make_graph(
        [helper.make_node("Scan", ["acc_in", "X"], ["acc_out", "ys"], body=step,
                          num_scan_inputs=1),
         helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
        [info("i", I64, []), info("c_in", TensorProto.BOOL, []), info("acc_in", F, [3])],
        [info("c_out", TensorProto.BOOL, []), info("acc_out", F, [3])])
    proto = model([helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)],
                  [info("M", I64, []), info("acc0", F, [3]), info("X", F, ["rows", 3])],
                  [info("acc", F, [3])])
    graph = modelc.from_onnx(proto)
    rng = np.random.default_rng(8)
    with runtime.load(modelc.export(graph), kernels=kernels) as session:
        for trip, rows in ((0, 3), (2, 1), (5, 40)):
            inputs = {"M": np.array(trip, np.int64),
                      "acc0": rng.standard_normal(3).astype(np.float32),
                      "X": rng.standard_normal((rows, 3)).astype(np.float32)}
            want = ort_run(proto, inputs)
            _compare(session.run(inputs), want, ["acc"])
            _compare(modelc.interpret(graph, inputs), want, ["acc"])


def test_a_loop_that_never_ends_is_refused() -> None:
    proto = model([helper.make_node("Loop", ["", "", "acc0", "total0"], ["acc", "total"],
                                    body=counting_body())],
                  [info("acc0", F, [2, 3]), info("total0", I64, []), info("w", F, [2, 3])],
                  [info("acc", F, [2, 3]), info("total", I64, [])])
    with pytest.raises(modelc.CompileError, match=r"'Loop_0' \(Loop\): still running after "
                                                  r"256 iterations, the most unrolled"):
        modelc.from_onnx(proto)


def test_scan_outputs_of_a_loop_with_a_run_time_condition_are_refused() -> None:
    body = counting_body(cond="c_in")
    body.node.append(helper.make_node("Sigmoid", ["acc_out"], ["step"]))
    body.output.append(info("step", F, [2, 3]))
    proto = model([helper.make_node("Loop", ["", "go", "acc0", "total0"],
                                    ["acc", "total", "steps"], body=body)],
                  [info("go", TensorProto.BOOL, []), info("acc0", F, [2, 3]),
                   info("total0", I64, []), info("w", F, [2, 3])],
                  [info("acc", F, [2, 3]), info("total", I64, []),
                   info("steps", F, ["n", 2, 3])])
    with pytest.raises(modelc.CompileError, match=r"condition is computed at run time has "
                                                  r"scan outputs of a length unknown"):
        modelc.from_onnx(proto)


def test_a_python_body_is_traced_only_through_body_trace() -> None:
    """A plain Python step runs eagerly but cannot be compiled as it is; Body.trace compiles
    it and keeps it as its eager semantics."""
    from executors import Lambda

    from modelc.ops.loop import Body
    from nn import functional as nf

    def step(i, states, elements, outer):  # type: ignore[no-untyped-def]
        return [nf.add(states[0], elements[0])], []

    rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    start = np.zeros(3, np.float32)
    np.testing.assert_array_equal(nf.loop(None, [start], [rows], [], step), rows.sum(0))
    with pytest.raises(modelc.CompileError, match=r"loop: to compile, body must be a Body "
                                                  r"\(Body.trace makes one from a Python "
                                                  r"step\), got function"):
        modelc.trace(Lambda(lambda s, r: nf.loop(None, [s], [r], [], step)), (start, rows))
    body = Body.trace(step, [((3,), "float32")], [((3,), "float32")])
    graph = modelc.trace(Lambda(lambda s, r: nf.loop(None, [s], [r], [], body)), (start, rows))
    with runtime.load(modelc.export(graph)) as session:
        (got,) = session.run({"input0": start, "input1": rows}).values()
    np.testing.assert_allclose(got, rows.sum(0))
