"""If, Loop and Scan: folded, guarded or unrolled at import, compared with onnxruntime on
the interpreter and on every kernel provider."""

from __future__ import annotations

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
runtime = pytest.importorskip("runtime")
from onnx import TensorProto, helper, numpy_helper

PROVIDERS = ["relaxed", "simd128", "scalar", "host"]
F = TensorProto.FLOAT


def info(name: str, elem: int, shape: list[int] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes: list, inputs: list, outputs: list, inits: list | None = None,
          opset: int = 16) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "control", inputs, outputs, inits or [])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    onnx.checker.check_model(proto)
    return proto


def branch(name: str, nodes: list, outputs: list[str], inits: list | None = None
           ) -> onnx.GraphProto:
    """A subgraph without inputs: it reads outer-scope names."""
    return helper.make_graph(nodes, name, [], [info(o, F, None)
                                               for o in outputs], inits or [])


def if_model(cond_from: str = "input", cond_shape: tuple[int, ...] = (1,)) -> onnx.ModelProto:
    """``y = If(cond) then relu(x @ w1) * 2 else sigmoid(x @ w2) - x``; a nested If inside
    the then branch on ``t > 0``; the condition is ``sum(x) > 0`` or the input ``flag`` of
    ``cond_shape``."""
    rng = np.random.default_rng(0)
    w1, w2 = (numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), n)
              for n in ("w1", "w2"))
    inner = helper.make_node("If", ["t_positive"], ["inner"], then_branch=branch(
        "inner_then", [helper.make_node("Neg", ["a"], ["inner_a"])], ["inner_a"]),
        else_branch=branch("inner_else", [helper.make_node("Abs", ["a"], ["inner_b"])],
                           ["inner_b"]))
    then = branch("then", [
        helper.make_node("MatMul", ["x", "w1"], ["m1"]),
        helper.make_node("Relu", ["m1"], ["r1"]),
        helper.make_node("Mul", ["r1", "two"], ["a"]),
        helper.make_node("Greater", ["t", "zero"], ["t_positive"]),
        inner], ["inner"],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    other = branch("else", [
        helper.make_node("MatMul", ["x", "w2"], ["m2"]),
        helper.make_node("Sigmoid", ["m2"], ["s2"]),
        helper.make_node("Sub", ["s2", "x"], ["b"])], ["b"])
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)]
    inputs = [info("x", F, [3, 4]), info("t", F, [])]
    if cond_from == "input":
        nodes.insert(0, helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0))
        nodes.insert(1, helper.make_node("Greater", ["total", "zero"], ["cond"]))
    else:
        inputs.append(info("cond", TensorProto.BOOL, list(cond_shape)))
    return model(nodes, inputs, [info("y", F, [3, 4])], [w1, w2, zero])


def feeds(sign: float, t: float) -> dict[str, np.ndarray]:
    x = np.abs(np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)) * sign
    return {"x": x, "t": np.array(t, np.float32)}


def ort_run(proto: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_runtime_if_runs_the_branch_the_condition_picks(kernels: str) -> None:
    proto = if_model()
    graph = modelc.optimize(modelc.from_onnx(proto))
    guarded = [n for n in graph.nodes if n.meta.get("guard")]
    assert {len(n.meta["guard"]) for n in guarded} == {1, 2}, "both levels are guarded"
    wasm = modelc.export(modelc.from_onnx(proto))
    with runtime.load(wasm, kernels=kernels) as session:
        for sign, t in [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0)]:
            inputs = feeds(sign, t)
            (want,) = ort_run(proto, inputs)
            np.testing.assert_allclose(session.run(inputs)["y"], want, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(modelc.interpret(graph, inputs)["y"], want, rtol=1e-5,
                                       atol=1e-6)


@pytest.mark.parametrize("shape", [(1,), (1, 1)], ids=str)
def test_if_on_a_bool_input_is_lowered_to_a_wasm_if(shape: tuple[int, ...]) -> None:
    """A condition of one element in any shape, as onnxruntime takes it (openWakeWord's
    classifiers test a (1, 1) one)."""
    proto = if_model(cond_from="flag", cond_shape=shape)
    wasm = modelc.export(modelc.from_onnx(proto))
    with runtime.load(wasm) as session:
        for flag in (True, False):
            inputs = {**feeds(1.0, -2.0), "cond": np.full(shape, flag)}
            (want,) = ort_run(proto, inputs)
            np.testing.assert_allclose(session.run(inputs)["y"], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("flag", [True, False])
def test_if_on_a_known_condition_imports_only_the_branch_taken(flag: bool) -> None:
    proto = if_model(cond_from="flag")
    cond = numpy_helper.from_array(np.array([flag]), "cond")
    proto.graph.initializer.append(cond)
    del proto.graph.input[2]
    graph = modelc.from_onnx(proto)
    assert [n.op for n in graph.nodes].count("linear") == 1, "one branch imported"
    assert ("sigmoid" in graph.ops()) is not flag
    inputs = feeds(1.0, 3.0)
    (want,) = ort_run(proto, inputs)
    np.testing.assert_allclose(modelc.interpret(graph, inputs)["y"], want, rtol=1e-5, atol=1e-6)


def test_runtime_if_with_branches_of_different_shapes_is_refused() -> None:
    then = branch("then", [helper.make_node("Identity", ["x"], ["a"])], ["a"])
    other = branch("else", [helper.make_node("ReduceSum", ["x"], ["b"], keepdims=0)], ["b"])
    proto = model([helper.make_node("If", ["cond"], ["y"], then_branch=then,
                                    else_branch=other)],
                  [info("x", F, [3]), info("cond", TensorProto.BOOL, [])],
                  [info("y", F, [3])])
    with pytest.raises(modelc.CompileError, match=r"output 0 is \[3\] in then_branch and "
                                                  r"\[\] in else_branch"):
        modelc.from_onnx(proto)


def loop_body() -> onnx.GraphProto:
    """``acc = acc * 0.5 + x * i``; scan output ``acc + 1``; the condition passes through."""
    nodes = [helper.make_node("Cast", ["i"], ["fi"], to=F),
             helper.make_node("Mul", ["x", "fi"], ["xi"]),
             helper.make_node("Mul", ["acc_in", "half"], ["scaled"]),
             helper.make_node("Add", ["scaled", "xi"], ["acc_out"]),
             helper.make_node("Add", ["acc_out", "one"], ["step"]),
             helper.make_node("Identity", ["c_in"], ["c_out"])]
    consts = [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
              numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    return helper.make_graph(nodes, "body", [
        info("i", TensorProto.INT64, []), info("c_in", TensorProto.BOOL, []),
        info("acc_in", F, [2, 3])], [info("c_out", TensorProto.BOOL, []),
                                     info("acc_out", F, [2, 3]), info("step", F, [2, 3])],
        consts)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_loop_with_a_known_trip_count_is_unrolled(kernels: str) -> None:
    trip = numpy_helper.from_array(np.array(5, np.int64), "trip")
    proto = model([helper.make_node("Loop", ["trip", "", "acc0"], ["acc", "steps"],
                                    body=loop_body())],
                  [info("x", F, [2, 3]), info("acc0", F, [2, 3])],
                  [info("acc", F, [2, 3]), info("steps", F, [5, 2, 3])], [trip])
    rng = np.random.default_rng(2)
    inputs = {n: rng.standard_normal((2, 3)).astype(np.float32) for n in ("x", "acc0")}
    want = ort_run(proto, inputs)
    with runtime.load(modelc.export(modelc.from_onnx(proto)), kernels=kernels) as session:
        got = session.run(inputs)
    for name, expected in zip(("acc", "steps"), want):
        np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6)


def test_loop_with_scan_outputs_and_a_run_time_trip_count_is_refused() -> None:
    """Its stacked outputs would have a length the host cannot know before the run."""
    proto = model([helper.make_node("Loop", ["trip", "", "acc0"], ["acc", "steps"],
                                    body=loop_body())],
                  [info("trip", TensorProto.INT64, []), info("x", F, [2, 3]),
                   info("acc0", F, [2, 3])], [info("acc", F, [2, 3]), info("steps", F, [5, 2, 3])])
    with pytest.raises(modelc.CompileError, match=r"'Loop_0' \(Loop\): .*per-iteration outputs "
                                                  r"need a trip count known before the run"):
        modelc.from_onnx(proto)


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_scan_is_unrolled_over_its_axis_both_directions(kernels: str) -> None:
    """A running sum over axis 1 of ``x`` (read backwards), with the partial sums stacked
    on output axis 1."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "elem"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["partial"])], "scan_body",
        [info("s_in", F, [2]), info("elem", F, [2])],
        [info("s_out", F, [2]), info("partial", F, [2])])
    proto = model([helper.make_node("Scan", ["s0", "x"], ["total", "partials"], body=body,
                                    num_scan_inputs=1, scan_input_axes=[1],
                                    scan_input_directions=[1], scan_output_axes=[1])],
                  [info("s0", F, [2]), info("x", F, [2, 6])],
                  [info("total", F, [2]), info("partials", F, [2, 6])])
    rng = np.random.default_rng(3)
    inputs = {"s0": rng.standard_normal(2).astype(np.float32),
              "x": rng.standard_normal((2, 6)).astype(np.float32)}
    want = ort_run(proto, inputs)
    with runtime.load(modelc.export(modelc.from_onnx(proto)), kernels=kernels) as session:
        got = session.run(inputs)
    for name, expected in zip(("total", "partials"), want):
        np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("width, taken", [(4, "relu"), (5, "neg")])
def test_if_on_a_shape_fixed_by_input_shapes_folds(width: int, taken: str) -> None:
    """``If(shape(x)[1] == 4)``, as Silero VAD's inner Ifs test their inputs' shapes: with
    the shape fixed at import only the branch taken is imported, and no ``where`` merges."""
    index = numpy_helper.from_array(np.array(1, np.int64), "one")
    four = numpy_helper.from_array(np.array(4, np.int64), "four")
    proto = model([helper.make_node("Shape", ["x"], ["shape"]),
                   helper.make_node("Gather", ["shape", "one"], ["width"]),
                   helper.make_node("Equal", ["width", "four"], ["cond"]),
                   helper.make_node("If", ["cond"], ["y"], then_branch=branch(
                       "then", [helper.make_node("Relu", ["x"], ["a"])], ["a"]),
                       else_branch=branch("else", [helper.make_node("Neg", ["x"], ["b"])],
                                          ["b"]))],
                  [info("x", F, [2, "width"])], [info("y", F, [2, "width"])],
                  [index, four])
    graph = modelc.from_onnx(proto, input_shapes={"x": (2, width)})
    assert graph.ops() == [taken]
    x = np.random.default_rng(4).standard_normal((2, width)).astype(np.float32)
    with runtime.load(modelc.export(graph)) as session:
        np.testing.assert_array_equal(session.run({"x": x})["y"], ort_run(proto, {"x": x})[0])


def test_runtime_if_with_a_branch_that_cannot_run_for_the_shapes_traps_there() -> None:
    """Silero VAD's 8 kHz branch cannot run on 512 samples (onnxruntime fails there too):
    only the branch that imports is kept, and picking the other traps."""
    shape = numpy_helper.from_array(np.array([2, 2], np.int64), "square")
    proto = model([helper.make_node("If", ["cond"], ["y"], then_branch=branch(
        "then", [helper.make_node("Relu", ["x"], ["a"])], ["a"]),
        else_branch=branch("else", [helper.make_node("Reshape", ["x", "square"], ["b"]),
                                    helper.make_node("Flatten", ["b"], ["c"], axis=0)],
                           ["c"]))],
        [info("x", F, [3]), info("cond", TensorProto.BOOL, [])], [info("y", F, [3])],
        [shape])
    with pytest.warns(UserWarning, match=r"'If_0' \(If\): only one branch imports; "
                                         r"else_branch, which cannot run for the compiled"):
        graph = modelc.from_onnx(proto)
    x = np.array([-1.0, 2.0, -3.0], np.float32)
    with runtime.load(modelc.export(graph)) as session:
        np.testing.assert_array_equal(session.run({"x": x, "cond": np.array(True)})["y"],
                                      ort_run(proto, {"x": x, "cond": np.array(True)})[0])
        with pytest.raises(runtime.Trap, match="unreachable"):
            session.run({"x": x, "cond": np.array(False)})
    optimized = modelc.optimize(graph)
    with pytest.raises(modelc.CompileError, match=r"the condition picked else_branch, which "
                                                  r"cannot run for the compiled input shapes"):
        modelc.interpret(optimized, {"x": x, "cond": np.array(False)})
