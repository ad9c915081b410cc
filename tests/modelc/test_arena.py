"""The symbolic memory plan: a valid layout at every dims, memory that follows the dims."""

import itertools
import json
import math

import numpy as np
import pytest
from models import MODEL_CASES

import modelc
from modelc import ops
from modelc.passes import optimize
from wasm_kernels.wasm import read_module


def _buffers(graph, dims):
    """Every activation and scratch buffer at ``dims``: (slot, first, last, bytes), with
    lifetimes worked out here from the graph's uses."""
    position = {id(node): i for i, node in enumerate(graph.nodes)}
    outputs = {id(v) for v in graph.outputs.values()}
    buffers = []
    for value in graph.values():
        start = -1 if value.producer is None else position[id(value.producer)]
        uses = [position[id(u)] for u in value.users]
        end = len(graph.nodes) if id(value) in outputs else max(uses, default=start)
        numel = math.prod(d if isinstance(d, int) else dims[d] for d in value.shape)
        buffers.append((graph.meta["slots"][id(value)], start, end,
                        numel * np.dtype(value.dtype).itemsize))
    for node in graph.nodes:
        for k, shape in enumerate(ops.get(node.op).scratch(node)):
            numel = math.prod(d if isinstance(d, int) else dims[d] for d in shape)
            here = position[id(node)]
            buffers.append((graph.meta["slots"][(id(node), k)], here, here, numel * 4))
    return buffers


def _corners_and_middle(ranges):
    values = [sorted({low, (low + high) // 2, high}) for low, high in ranges.values()]
    return [dict(zip(ranges, combo)) for combo in itertools.product(*values)]


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_buffers_alive_together_never_overlap_at_any_dims(case):
    build, example_shape, dynamic, _ = MODEL_CASES[case]
    graph = optimize(modelc.trace(build(), (np.zeros(example_shape, np.float32),),
                                  dynamic={"input0": dynamic}))
    plan = graph.meta["plan"]
    for dims in _corners_and_middle(graph.dims):
        offsets, arena = plan.evaluate(dims)
        spans = [(slot, first, last, offsets[slot], offsets[slot] + nbytes)
                 for slot, first, last, nbytes in _buffers(graph, dims)]
        assert all(lo % 16 == 0 and hi <= arena for _, _, _, lo, hi in spans)
        for (s1, f1, l1, lo1, hi1), (s2, f2, l2, lo2, hi2) in itertools.combinations(spans, 2):
            if s1 != s2 and not (l1 < f2 or l2 < f1) and lo1 < hi1 and lo2 < hi2:
                assert hi1 <= lo2 or hi2 <= lo1, (dims, s1, s2)


def _meta(wasm):
    return json.loads(read_module(wasm).custom("wasmnn.model"))


def test_memory_minimum_is_the_arena_at_the_smallest_dims():
    build, example_shape, _, _ = MODEL_CASES["resnet_block"]
    model = build()
    x = np.zeros(example_shape, np.float32)
    wide = _meta(modelc.export(model, (x,), dynamic={"input0": {0: ("batch", 1, 512)}}))
    one = _meta(modelc.export(model, (x[:1],)))
    most = _meta(modelc.export(model, (np.zeros((512,) + example_shape[1:], np.float32),)))
    assert wide["memory_bytes"] < one["memory_bytes"] + 1024  # messages and the table
    assert wide["arena_bytes_min"] == one["arena_bytes"]
    assert wide["memory_bytes_max"] <= most["memory_bytes"] + 1024
    assert wide["memory_bytes_max"] > 100 * wide["memory_bytes"] // 2 > 0
    moving = [t for t in wide["inputs"] + wide["outputs"] if "offset_at" in t]
    assert moving and wide["layout"]["entry"] == "layout"
    assert "layout" not in one and all("offset_at" not in t for t in one["outputs"])


def test_a_plan_over_four_gibibytes_is_refused_naming_the_dims(mlp):
    with pytest.raises(modelc.CompileError,
                       match=r"needs \d+ bytes of memory with dims 'batch' up to 40000000"):
        modelc.export(mlp, (np.zeros((2, 12), np.float32),),
                      dynamic={"input0": {0: ("batch", 1, 40_000_000)}})


def _onnx_linear(dim_param: str):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim_param, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [dim_param, 4])], [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_export_warns_when_a_dim_was_bounded_by_the_default(tmp_path, recwarn):
    path = tmp_path / "linear.onnx"
    pytest.importorskip("onnx").save(_onnx_linear("N"), path)
    with pytest.warns(UserWarning, match=r"symbolic dim 'N' was bounded by the default range "
                                         r"\[1, 512\] \(no bound given\): at the largest dims "
                                         r"the model needs (\d+) bytes of memory") as caught:
        wasm = modelc.export(path)
    meta = _meta(wasm)
    assert f"needs {meta['memory_bytes_max']} bytes" in str(caught[0].message)
    assert meta["memory_bytes_max"] - meta["memory_bytes"] >= 511 * (8 + 4) * 4
    recwarn.clear()
    modelc.export(path, dynamic={"x": {0: ("N", 1, 4)}})
    assert not [w for w in recwarn if "bounded by the default" in str(w.message)]
