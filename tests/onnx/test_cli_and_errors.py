"""``wasmnn export MODEL.onnx`` and the importer's error reports."""

from __future__ import annotations

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import helper, numpy_helper

from runtime.cli import main


def _mlp_onnx(torch_to_onnx, path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3),
                                torch.nn.Softmax(-1))
    path.write_bytes(torch_to_onnx(model, (torch.randn(2, 6),), ["x"], ["probs"],
                                   {"x": {0: "batch"}}))


def test_export_onnx_runs_in_wasm_and_matches_onnxruntime(torch_to_onnx, tmp_path, capsys):
    runtime = pytest.importorskip("runtime")
    source, out = tmp_path / "mlp.onnx", tmp_path / "mlp.wasm"
    _mlp_onnx(torch_to_onnx, source)
    assert main(["export", str(source), "-o", str(out), "--dynamic", "x:0=batch:1:8"]) == 0
    assert "wrote" in capsys.readouterr().out
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    want = pytest.importorskip("onnxruntime").InferenceSession(str(source)).run(None, {"x": x})
    with runtime.load(out.read_bytes()) as session:
        got = session.run({"x": x})["probs"]
    assert np.abs(got - want[0]).max() <= 1e-4 * np.abs(want[0]).max()


def test_export_onnx_with_fixed_input_shape(torch_to_onnx, tmp_path, capsys):
    source, out = tmp_path / "mlp.onnx", tmp_path / "mlp.wasm"
    _mlp_onnx(torch_to_onnx, source)
    assert main(["export", str(source), "-o", str(out), "--input-shape", "x=4x6"]) == 0
    assert main(["inspect", "--json", str(out)]) == 0
    assert '"batch"' not in capsys.readouterr().out


@pytest.mark.parametrize("args, code, message", [
    (["--input-shape", "x=4"], 7, "has rank 1, the model's input has rank 2"),
    (["--input-shape", "y=4x6"], 7, r"name \['y'\], which are not among the model's inputs"),
    (["--input", "x=4x6"], 7, "use --input-shape"),
    (["--input-shape", "x=4xq"], 7, "expected NAME=SHAPE"),
])
def test_export_onnx_option_errors(args, code, message, torch_to_onnx, tmp_path, capsys):
    source = tmp_path / "mlp.onnx"
    _mlp_onnx(torch_to_onnx, source)
    assert main(["export", str(source), "-o", str(tmp_path / "o.wasm"), *args]) == code
    assert pytest.importorskip("re").search(message, capsys.readouterr().err)


def _model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _float(name, shape):
    return helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)


def test_unsupported_ops_are_reported_all_at_once(tmp_path, capsys):
    model = _model([helper.make_node("Relu", ["x"], ["a"], name="ok"),
                    helper.make_node("Det", ["a"], ["b"], name="mix"),
                    helper.make_node("Unique", ["b"], ["c"], name="pick"),
                    helper.make_node("Inverse", ["c"], ["y"], name="vendor",
                                     domain="com.microsoft")],
                   [_float("x", [2, 3])], [_float("y", None)],
                   [numpy_helper.from_array(np.array([1], np.int64), "k")])
    message = r"3 unsupported node\(s\): 'mix' \(Det\), 'pick' \(Unique\), 'vendor' " \
              r"\(com.microsoft.Inverse\); supported ops: \['Abs'"
    with pytest.raises(modelc.UnsupportedOpError, match=message):
        modelc.from_onnx(model)
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["export", str(path), "-o", str(tmp_path / "bad.wasm")]) == 8
    assert "'mix' (Det)" in capsys.readouterr().err


def test_unsupported_ops_inside_control_flow_are_reported_and_marked(tmp_path, capsys):
    def branch(name, nodes, output):
        return helper.make_graph(nodes, name, [], [_float(output, [2, 3])])

    inner = helper.make_node("Loop", ["", "cond"], [], name="spin", body=helper.make_graph(
        [helper.make_node("Det", ["x"], ["d"], name="deep")], "body",
        [helper.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
         helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])]))
    then = branch("then", [helper.make_node("Unique", ["x"], ["a"], name="soft"), inner], "a")
    other = branch("else", [helper.make_node("Det", ["x"], ["b"], name="also")], "b")
    model = _model([helper.make_node("If", ["cond"], ["y0"], name="choose", then_branch=then,
                                     else_branch=other),
                    helper.make_node("Det", ["y0"], ["y"], name="top")],
                   [_float("x", [2, 3]),
                    helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, [])],
                   [_float("y", None)])
    message = (r"4 unsupported node\(s\): 'choose'.else_branch > 'also' \(Det\), "
               r"'choose'.then_branch > 'soft' \(Unique\), 'choose'.then_branch > 'spin'.body "
               r"> 'deep' \(Det\), 'top' \(Det\); only inside control-flow subgraphs "
               r"\(If/Loop/Scan\): \['Unique'\]; supported ops")
    with pytest.raises(modelc.UnsupportedOpError, match=message):
        modelc.from_onnx(model)
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["export", str(path), "-o", str(tmp_path / "bad.wasm")]) == 8
    assert "only inside control-flow subgraphs (If/Loop/Scan): ['Unique']" in \
        capsys.readouterr().err


@pytest.mark.parametrize("opset", [7, 8])
def test_old_opsets_are_converted_with_a_warning(opset):
    """Opset 7's legacy-free Add broadcast and opset 8's Upsample-era graph: converted to
    opset 9 by onnx.version_converter, then compared with onnxruntime on the original."""
    ort = pytest.importorskip("onnxruntime")
    model = _model([helper.make_node("Add", ["x", "b"], ["s"]),
                    helper.make_node("MaxPool", ["s"], ["p"], kernel_shape=[2, 2]),
                    helper.make_node("Relu", ["p"], ["y"])],
                   [_float("x", [1, 2, 4, 4])], [_float("y", [1, 2, 3, 3])],
                   [numpy_helper.from_array(np.arange(4, dtype=np.float32) - 2, "b")],
                   opset=opset)
    model.ir_version = 3
    with pytest.warns(UserWarning, match=f"opset {opset}; converting it to opset 9 with "
                                         "onnx.version_converter"):
        graph = modelc.optimize(modelc.from_onnx(model))
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(modelc.interpret(graph, {"x": x})["y"], want, rtol=1e-6)


def test_a_node_error_names_the_node_and_op():
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv4d")],
                   [_float("x", [1, 1, 4, 4, 4, 4])], [_float("y", None)],
                   [numpy_helper.from_array(np.ones((1, 1, 2, 2, 2, 2), np.float32), "w")])
    with pytest.raises(modelc.CompileError,
                       match=r"ONNX node 'conv4d' \(Conv\): only 1-D, 2-D and 3-D Conv are"):
        modelc.from_onnx(model)


def test_symbolic_shape_reaching_a_runtime_op_names_the_fix():
    model = _model([helper.make_node("Shape", ["x"], ["s"]),
                    helper.make_node("Cast", ["s"], ["f"], name="cast",
                                     to=onnx.TensorProto.FLOAT),
                    helper.make_node("Mul", ["x", "f"], ["y"], name="scale")],
                   [_float("x", ["n"])], [_float("y", None)])
    # NOTE: the float Cast keeps the dim (a Range may take it); its run-time use is refused
    with pytest.raises(modelc.CompileError, match=r"'scale' \(Mul\).*symbolic dims \['n'\]"
                                                  r".*input_shapes"):
        modelc.from_onnx(model)
    graph = modelc.from_onnx(model, input_shapes={"x": [3]})
    x = np.arange(3, dtype=np.float32)
    assert modelc.interpret(graph, {"x": x})["y"].tolist() == [0.0, 3.0, 6.0]


def test_symbolic_dims_get_names_and_default_bounds():
    model = _model([helper.make_node("Relu", ["x/0"], ["y"])],
                   [_float("x/0", ["batch size", None, 4])], [_float("y", None)])
    graph = modelc.from_onnx(model, dynamic={"x/0": {1: ("seq", 2, 9)}})
    assert graph.inputs["x/0"].shape == ("batch_size", "seq", 4)
    assert graph.dims == {"batch_size": modelc.onnx.DEFAULT_DIM_RANGE, "seq": (2, 9)}
