import numpy as np
import pytest

import modelc
import nn
from modelc import TraceError, UnsupportedOpError
from nn._dispatch import primitive


def test_trace_records_primitives_with_symbolic_batch(mlp):
    x = np.zeros((3, 12), np.float32)
    graph = modelc.trace(mlp, (x,), dynamic={"input0": {0: ("batch", 1, 8)}})
    assert [n.op for n in graph.nodes] == ["linear", "relu", "linear"]
    assert graph.inputs["input0"].shape == ("batch", 12)
    assert graph.outputs["output0"].shape == ("batch", 5)
    assert graph.dims == {"batch": (1, 8)}
    weights = [v for v in graph.nodes[0].inputs if v.is_constant]
    assert [w.shape for w in weights] == [(16, 12), (16,)]
    np.testing.assert_array_equal(weights[0].data, mlp[0].weight)


def test_trace_records_the_user_source_line(mlp):
    graph = modelc.trace(mlp, (np.zeros((1, 12), np.float32),))
    assert "test_trace.py" in graph.nodes[0].meta["source"]


def test_dict_inputs_keep_their_names(mlp):
    graph = modelc.trace(mlp, {"pixels": np.zeros((2, 12), np.float32)})
    assert list(graph.inputs) == ["pixels"]


class Branchy(nn.Module):
    def forward(self, x):
        if x:
            return x
        return x


def test_data_dependent_control_flow_is_a_trace_error():
    with pytest.raises(TraceError, match=r"data-dependent control flow.*test_trace.py:\d+"):
        modelc.trace(Branchy(), (np.zeros((2,), np.float32),))


@primitive
def frobnicate(input: np.ndarray) -> np.ndarray:
    return input


class UsesUnknownOp(nn.Module):
    def forward(self, x):
        return frobnicate(x)


def test_unknown_primitive_names_op_and_line():
    with pytest.raises(UnsupportedOpError,
                       match=r"(?s)unknown op 'frobnicate'.*available: \[.*'linear'.*test_trace"):
        modelc.trace(UsesUnknownOp(), (np.zeros((2,), np.float32),))


class NumpyInside(nn.Module):
    def forward(self, x):
        return np.asarray(x) + 1


def test_converting_a_traced_tensor_to_an_array_is_a_trace_error():
    with pytest.raises(TraceError, match=r"converted to a numpy array.*test_trace.py:\d+"):
        modelc.trace(NumpyInside(), (np.zeros((2,), np.float32),))


def test_shape_mismatch_is_reported_at_trace_time(mlp):
    with pytest.raises(modelc.CompileError, match="input has 7 features but weight expects 12"):
        modelc.trace(mlp, (np.zeros((2, 7), np.float32),))


@pytest.mark.parametrize("dynamic, message", [
    ({"nope": {0: ("b", 1, 2)}}, r"inputs \['nope'\] that are not among"),
    ({"input0": {5: ("b", 1, 2)}}, "names axis 5, but the example input has rank 2"),
    ({"input0": {0: ("b", 3, 2)}}, r"need integers 1 <= min <= max"),
    ({"input0": {0: "b"}}, r"must be \(name, min, max\)"),
])
def test_bad_dynamic_specs(mlp, dynamic, message):
    with pytest.raises((ValueError, TypeError), match=message):
        modelc.trace(mlp, (np.zeros((2, 12), np.float32),), dynamic=dynamic)
