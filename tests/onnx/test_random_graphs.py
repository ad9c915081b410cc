"""Differential tests: seeded random ONNX graphs (opset 17, images 18) imported, compiled to
wasm and run, against onnxruntime on the same graph.

Each graph takes X (batch, 6, 8) or (batch, 3, 11, 12) with a symbolic batch and chains 4-7
steps of default-domain ops (MatMul, broadcasting arithmetic, activations of the Elu family
and Sin/Cos, Softmax and LogSoftmax on any axis, CumSum, LayerNormalization, Transpose,
reductions, Concat, Slice, Reshape, Clip, Pow, Sqrt, Unsqueeze/Squeeze, attention-like
products, LSTM/GRU/RNN, Einsum, masks from int32/int8/uint8/int16/uint16, a run-time If,
GatherND at run-time indices, a Scan down the batch (a wasm loop), Pow by a run-time
exponent, int32/int64 Div and Mod, Atan and Asinh; on images convolutions, pools, pads,
Resize of every mode, antialiased or cropped by roi, DepthToSpace and SpaceToDepth, 3-D
convolutions and pools over the image as a volume), so the importer and the compiler meet
combinations no hand-written case has.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

import modelc
import runtime

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper, shape_inference

OPSET = 17
"""The sequence graphs' opset; the image graphs' is 18 (Resize's antialias)."""


class RandomGraph:
    """Nodes and initializers of one random graph over X (batch, *shape); ``shape`` is the
    static axes of the current value ``x``, read from onnx's shape inference after each
    step."""

    opset = OPSET

    def __init__(self, seed: int, shape: tuple[int, ...]):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.steps: list[str] = []
        self.input_shape = self.shape = shape
        self.x = "X"
        for _ in range(int(self.rng.integers(4, 8))):
            options = self.options()
            name = str(self.rng.choice(sorted(options)))
            self.x = options[name]()
            self.shape = self._inferred_shape()
            self.steps.append(name)

    def options(self) -> dict[str, Callable[[], str]]:
        raise NotImplementedError

    def const(self, value: np.ndarray) -> str:
        name = f"c{len(self.initializers)}"
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def weight(self, *shape: int) -> str:
        fan_in = max(1, math.prod(shape[1:]))
        return self.const((self.rng.uniform(-1, 1, shape) / math.sqrt(fan_in))
                          .astype(np.float32))

    def node(self, op: str, inputs: list[str], **attrs: object) -> str:
        out = f"v{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def model(self, declare_output: bool = True) -> onnx.ModelProto:
        """The graph as a model; its output Y declared (batch, *shape), or left for shape
        inference."""
        shape = ["batch", *self.shape] if declare_output else None
        graph = helper.make_graph(
            self.nodes + [helper.make_node("Identity", [self.x], ["Y"])], "random",
            [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                           ["batch", *self.input_shape])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape)],
            self.initializers)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                 ir_version=8)

    def _inferred_shape(self) -> tuple[int, ...]:
        if self.x == "X":
            return self.input_shape
        inferred = shape_inference.infer_shapes(self.model(declare_output=False),
                                                strict_mode=True)
        [value] = [v for v in inferred.graph.value_info if v.name == self.x]
        return tuple(d.dim_value for d in value.type.tensor_type.shape.dim[1:])


class SequenceGraph(RandomGraph):
    """Steps over X (batch, S, D)."""

    def options(self) -> dict[str, Callable[[], str]]:
        x, (s, d), rng = self.x, self.shape, self.rng
        return {
            "matmul": lambda: self.node("MatMul", [x, self.weight(
                d, int(rng.choice([3, 5, 8, 16])))]),
            "bias_activation": lambda: self.node(str(rng.choice(
                ["Relu", "Sigmoid", "Tanh", "Erf", "Abs", "Neg", "Elu", "Selu", "Celu",
                 "Softplus", "Softsign", "Sin", "Cos", "Atan", "Asinh"])),
                [self.node("Add", [x, self.weight(d)])]),
            "broadcast": lambda: self.node(str(rng.choice(["Add", "Mul", "Sub"])), [
                x, self.weight(*[(d,), (s, 1), (1,), (s, d)][int(rng.integers(4))])]),
            "softmax": lambda: self.node(str(rng.choice(["Softmax", "LogSoftmax"])), [x],
                                         axis=int(rng.choice([1, 2, -1]))),
            "cumsum": lambda: self.node("CumSum", [x, self.const(np.array(
                int(rng.choice([1, 2, -1])), np.int64))], exclusive=int(rng.integers(2)),
                reverse=int(rng.integers(2))),
            "layer_norm": lambda: self.node("LayerNormalization",
                                            [x, self.weight(d), self.weight(d)], axis=-1),
            "transpose": lambda: self.node("Transpose", [x], perm=[0, 2, 1]),
            "reduce": self._reduce,
            "concat": lambda: self.node("Concat", [x, self.node("Tanh", [x])],
                                        axis=int(rng.choice([1, 2]))),
            "slice": self._slice,
            "reshape": lambda: self.node("Reshape", [x, self.const(
                np.array([0, 2 * s, d // 2] if d % 2 == 0 else [0, s * d, 1], np.int64))]),
            "clip": lambda: self.node("Clip", [x, self.const(np.float32(-0.5)),
                                               self.const(np.float32(0.7))]),
            "ratio": lambda: self.node("Div", [x, self.node("Add", [
                self.node("Abs", [x]), self.const(np.float32(1.0))])]),
            "power": self._power,
            "sqrt": lambda: self.node("Sqrt", [self.node("Add", [
                self.node("Abs", [x]), self.const(np.float32(1.0))])]),
            "unsqueeze_squeeze": lambda: self.node("Squeeze", [
                self.node("Unsqueeze", [x, self.const(np.array([1], np.int64))]),
                self.const(np.array([1], np.int64))]),
            "attention_scores": lambda: self.node("Mul", [
                self.node("MatMul", [x, self.node("Transpose", [x], perm=[0, 2, 1])]),
                self.const(np.float32(1 / math.sqrt(d)))]),
            "residual": lambda: self.node("Add", [x, self.node("Tanh", [
                self.node("MatMul", [x, self.weight(d, d)])])]),
            "recurrent": self._recurrent,
            "einsum": lambda: self.node("Einsum", [x, self.weight(d, int(rng.choice([4, 8])))],
                                        equation=str(rng.choice(["bsd,de->bse",
                                                                 "...d,de->...e"]))),
            "integer_mask": self._integer_mask,
            "runtime_if": self._runtime_if,
            "gather_nd": self._gather_nd,
            "scan_batch": self._scan_batch,
            "integer_division": self._integer_division,
        }

    def _integer_division(self) -> str:
        """``x + 0.001 * Div or Mod(int(1000 x), int(10 |x|) + 1)`` in int32 or int64:
        integer division at run time, exact on both sides."""
        rng = self.rng
        dtype = helper.np_dtype_to_tensor_dtype(np.dtype(str(rng.choice(["int32", "int64"]))))
        numerator = self.node("Cast", [self.node("Mul", [self.x, self.const(
            np.float32(1000.0))])], to=dtype)
        denominator = self.node("Cast", [self.node("Add", [self.node("Mul", [self.node(
            "Abs", [self.x]), self.const(np.float32(10.0))]), self.const(np.float32(1.0))])],
            to=dtype)
        op = str(rng.choice(["Div", "Mod"]))
        attrs = {"fmod": int(rng.integers(2))} if op == "Mod" else {}
        quotient = self.node(op, [numerator, denominator], **attrs)
        return self.node("Add", [self.x, self.node("Mul", [self.node(
            "Cast", [quotient], to=TensorProto.FLOAT), self.const(np.float32(0.001))])])

    def _recurrent(self) -> str:
        """An LSTM, GRU (either reset) or RNN over S in a random direction: X goes time-major
        and the directions' outputs come back as features, (batch, S, dirs * hidden)."""
        rng, (s, d) = self.rng, self.shape
        op = str(rng.choice(["LSTM", "GRU", "RNN"]))
        direction = str(rng.choice(["forward", "reverse", "bidirectional"]))
        dirs, hidden = 1 + (direction == "bidirectional"), int(rng.choice([3, 5, 8]))
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        inputs = [self.node("Transpose", [self.x], perm=[1, 0, 2]),  # (S, batch, D)
                  self.weight(dirs, gates * hidden, d), self.weight(dirs, gates * hidden, hidden)]
        if rng.integers(2):
            inputs.append(self.weight(dirs, 2 * gates * hidden))
        attrs: dict[str, object] = {"hidden_size": hidden, "direction": direction}
        if op == "GRU":
            attrs["linear_before_reset"] = int(rng.integers(2))
        y = self.node(op, inputs, **attrs)  # (S, dirs, batch, hidden)
        return self.node("Reshape", [self.node("Transpose", [y], perm=[2, 0, 1, 3]),
                                     self.const(np.array([0, s, dirs * hidden], np.int64))])

    def _integer_mask(self) -> str:
        """``x * (n >= k) + 0.01 * where(n >= k, n, 3)`` (16-bit: ``+ 0.01 * n``) for ``n``
        the integers ``int(4x) + 1`` of a random dtype among int32 and the narrow ones,
        moved through a Concat and a Slice: a float -> integer cast (wrapping into uint8,
        uint16), wrapping integer arithmetic, data movement, a comparison and a Where on that
        dtype, and casts back to float (values away from the cast's rounding edges do not matter: both sides
        truncate)."""
        rng, d = self.rng, self.shape[-1]
        dtype = np.dtype(str(rng.choice(["int32", "int8", "uint8", "int16", "uint16"])))
        scaled = self.node("Mul", [self.x, self.const(np.float32(4.0))])
        ints = self.node("Add", [self.node("Cast", [scaled], to=helper.np_dtype_to_tensor_dtype(
            dtype)), self.const(np.array(1).astype(dtype))])
        moved = self.node("Slice", [self.node("Concat", [ints, ints], axis=-1),
                                    self.const(np.array([d], np.int64)),
                                    self.const(np.array([2 * d], np.int64)),
                                    self.const(np.array([-1], np.int64))])
        mask = self.node(str(rng.choice(["GreaterOrEqual", "Less", "Equal"])),
                         [moved, self.const(np.array(rng.integers(-1, 2)).astype(dtype))])
        values = (moved if dtype.itemsize == 2  # NOTE: onnxruntime has no 16-bit Where
                  else self.node("Where", [mask, moved, self.const(np.array(3).astype(dtype))]))
        return self.node("Add", [
            self.node("Mul", [self.x, self.node("Cast", [mask], to=TensorProto.FLOAT)]),
            self.node("Mul", [self.node("Cast", [values], to=TensorProto.FLOAT),
                              self.const(np.float32(0.01))])])

    def _gather_nd(self) -> str:
        """``x + GatherND(table, int64(clip(2x + 2, 0, 4.5))[..., None])``: a constant (5,)
        table read at rows computed at run time (the cast truncates on both sides)."""
        scaled = self.node("Add", [self.node("Mul", [self.x, self.const(np.float32(2.0))]),
                                   self.const(np.float32(2.0))])
        rows = self.node("Cast", [self.node("Clip", [scaled, self.const(np.float32(0.0)),
                                                     self.const(np.float32(4.5))])],
                         to=TensorProto.INT64)
        indices = self.node("Unsqueeze", [rows, self.const(np.array([-1], np.int64))])
        table = self.const(self.rng.uniform(-1, 1, 5).astype(np.float32))
        return self.node("Add", [self.x, self.node("GatherND", [table, indices])])

    def _scan_batch(self) -> str:
        """A Scan down the symbolic batch axis (a wasm loop): ``s = tanh(s / 2 + x_b)``
        from a constant start, each ``s`` stacked back into (batch, S, D)."""
        shape = list(self.shape)
        body = helper.make_graph(
            [helper.make_node("Mul", ["s_in", "half"], ["halved"]),
             helper.make_node("Add", ["halved", "row"], ["mixed"]),
             helper.make_node("Tanh", ["mixed"], ["s_out"]),
             helper.make_node("Identity", ["s_out"], ["y"])], "scan_body",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
             for n in ("s_in", "row")],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
             for n in ("s_out", "y")],
            [numpy_helper.from_array(np.array(0.5, np.float32), "half")])
        start = self.const(self.rng.uniform(-1, 1, shape).astype(np.float32))
        out = f"v{len(self.nodes)}"
        self.nodes.append(helper.make_node("Scan", [start, self.x], [f"{out}_s", out],
                                           body=body, num_scan_inputs=1))
        return out

    def _runtime_if(self) -> str:
        """``If(sum(x) > 0)`` over two branches of the same shape that read ``x`` from the
        outer scope: a guarded wasm ``if`` for each, merged by ``where``."""
        total = self.node("ReduceSum", [self.x], keepdims=0)
        cond = self.node("Greater", [total, self.const(np.float32(0.0))])
        out = f"v{len(self.nodes)}"

        def branch(name: str, op: str, *extra: str) -> onnx.GraphProto:
            node = helper.make_node(op, [self.x, *extra], [f"{out}_{name}"])
            return helper.make_graph([node], name, [], [helper.make_tensor_value_info(
                f"{out}_{name}", TensorProto.FLOAT, None)])

        self.nodes.append(helper.make_node(
            "If", [cond], [out], then_branch=branch("then", "Tanh"),
            else_branch=branch("else", "Mul", self.const(np.float32(0.5)))))
        return out

    def _power(self) -> str:
        """A positive integer power of tanh(x); other exponents of |tanh(x)| + 0.5, away
        from the NaNs and poles both sides would agree on but not compare, among them the
        run-time exponent 2 tanh(x)."""
        choice = self.rng.choice([2.0, 3.0, -1.0, -2.0, 0.5, 1.7, -0.3, np.nan])
        base = self.node("Tanh", [self.x])
        if np.isnan(choice):
            exponent = self.node("Mul", [base, self.const(np.float32(2.0))])
        else:
            exponent = self.const(np.float32(choice))
        if np.isnan(choice) or choice < 0 or not float(choice).is_integer():
            base = self.node("Add", [self.node("Abs", [base]), self.const(np.float32(0.5))])
        return self.node("Pow", [base, exponent])

    def _reduce(self) -> str:
        axis = int(self.rng.choice([1, 2]))
        op = str(self.rng.choice(["ReduceMean", "ReduceMax", "ReduceSum"]))
        if op == "ReduceSum":  # axes became an input in opset 13, the others in 18
            return self.node(op, [self.x, self.const(np.array([axis], np.int64))], keepdims=1)
        return self.node(op, [self.x], axes=[axis], keepdims=1)

    def _slice(self) -> str:
        axis = int(self.rng.choice([1, 2]))
        size, step = self.shape[axis - 1], int(self.rng.choice([1, 2]))
        if size < 2:
            return self.x
        return self.node("Slice", [self.x] + [self.const(np.array([v], np.int64))
                                              for v in (1, size, axis, step)])


class ImageGraph(RandomGraph):
    """Steps over X (batch, C, H, W)."""

    opset = 18

    def options(self) -> dict[str, Callable[[], str]]:
        x, rng, c = self.x, self.rng, self.shape[0]
        return {
            "conv": self._conv,
            "conv_transpose": self._conv_transpose,
            "batch_norm": lambda: self.node("BatchNormalization", [
                x, self.weight(c), self.weight(c), self.weight(c),
                self.const(self.rng.uniform(0.5, 2, c).astype(np.float32))]),
            "activation": lambda: self.node(str(rng.choice(
                ["Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Elu",
                 "Selu", "Softplus", "Softsign"])), [x]),
            "resize": self._resize,
            "depth_to_space": self._depth_to_space,
            "pool": self._pool,
            "global_pool": lambda: self.node("GlobalAveragePool", [x]),
            "pad": self._pad,
            "lrn": lambda: self.node("LRN", [x], size=int(rng.choice([1, 3, 5])),
                                     alpha=1e-3, beta=0.75, bias=1.0),
            "residual": lambda: self.node("Relu", [self.node("Add", [x, self.node(
                "Conv", [x, self.weight(c, c, 3, 3)], pads=[1, 1, 1, 1])])]),
            "concat": lambda: self.node("Concat", [x, self.node("Relu", [x])], axis=1),
            "volume": self._volume,
        }

    def _volume(self) -> str:
        """The image as a (batch, 1, C, H, W) volume through a 3-D Conv (2 filters), MaxPool,
        AveragePool or LpPool of 'same' padding, its channels folded back in."""
        rng, (c, h, w) = self.rng, self.shape
        volume = self.node("Unsqueeze", [self.x, self.const(np.array([1], np.int64))])
        kernel = [int(k) for k in rng.choice([1, 3], 3)]
        pads = [k // 2 for k in kernel] * 2
        op = str(rng.choice(["Conv", "MaxPool", "AveragePool", "LpPool"]))
        if op == "Conv":
            out = self.node("Conv", [volume, self.weight(2, 1, *kernel), self.weight(2)],
                            pads=pads)
        else:
            out = self.node(op, [volume], kernel_shape=kernel, pads=pads)
        return self.node("Reshape", [out, self.const(np.array([0, -1, h, w], np.int64))])

    def _conv(self) -> str:
        rng, (c, h, w) = self.rng, self.shape
        out = int(rng.choice([2, 4, 6]))
        groups = int(rng.choice([g for g in (1, 2, c) if c % g == 0 and out % g == 0
                                 and (g != c or out == c)]))
        k, stride = int(rng.choice([1, 3, 5])), int(rng.choice([1, 2]))
        dilation = int(rng.choice([1, 2])) if k > 1 else 1
        inputs = [self.x, self.weight(out, c // groups, k, k)] + (
            [self.weight(out)] if rng.integers(2) else [])
        attrs: dict[str, object] = {"strides": [stride] * 2, "dilations": [dilation] * 2,
                                    "group": groups}
        if rng.integers(3) == 0 and dilation == 1:
            attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
        else:
            attrs["pads"] = [int(p) for p in rng.integers(0, k // 2 + 1, 4)]
            pads = attrs["pads"]
            if min(h + pads[0] + pads[2], w + pads[1] + pads[3]) < dilation * (k - 1) + 1:
                return self.x
        if min(h, w) < dilation * (k - 1) + 1 and attrs.get("auto_pad") == "VALID":
            return self.x
        return self.node("Conv", inputs, **attrs)

    def _conv_transpose(self) -> str:
        rng, (c, h, w) = self.rng, self.shape
        out = int(rng.choice([2, 4]))
        k, stride = int(rng.choice([2, 3, 4])), int(rng.choice([1, 2]))
        pads = [int(p) for p in rng.integers(0, k // 2 + 1, 4)]
        extra = int(rng.integers(0, stride))
        if min((n - 1) * stride + k + extra - head - tail
               for n, head, tail in ((h, pads[0], pads[2]), (w, pads[1], pads[3]))) < 1:
            return self.x
        return self.node("ConvTranspose", [self.x, self.weight(c, out, k, k)],
                         strides=[stride] * 2, pads=pads, output_padding=[extra] * 2)

    def _resize(self) -> str:
        """Resize by scales (the batch is symbolic, so no sizes) with any mode and
        coordinate transformation (a crop by roi among them), from half to twice the size;
        linear and cubic ones antialiased half the time."""
        rng = self.rng
        scales = [float(rng.choice([0.5, 0.75, 1.3, 2.0]) if n > 1 else 2.0)
                  for n in self.shape[1:]]
        mode = str(rng.choice(["nearest", "linear", "cubic"]))
        transform = str(rng.choice(["half_pixel", "pytorch_half_pixel", "align_corners",
                                    "asymmetric", "tf_crop_and_resize"]))
        attrs: dict[str, object] = {"mode": mode, "coordinate_transformation_mode": transform}
        if mode == "nearest":
            attrs["nearest_mode"] = str(rng.choice(["round_prefer_floor", "floor", "ceil"]))
        elif rng.integers(2):
            attrs["antialias"] = 1
        roi = ""
        if transform == "tf_crop_and_resize":
            starts, ends = rng.uniform(-0.2, 0.4, 2), rng.uniform(0.6, 1.2, 2)
            roi = self.const(np.array([0, 0, *starts, 1, 1, *ends], np.float32))
            attrs["extrapolation_value"] = float(rng.uniform(-1, 1))
        return self.node("Resize", [self.x, roi, self.const(np.array([1, 1, *scales],
                                                                     np.float32))], **attrs)

    def _depth_to_space(self) -> str:
        """SpaceToDepth where H and W are even, else DepthToSpace where C is a multiple of 4
        (either mode), else nothing."""
        c, h, w = self.shape
        if h % 2 == 0 and w % 2 == 0 and c <= 8:
            return self.node("SpaceToDepth", [self.x], blocksize=2)
        if c % 4:
            return self.x
        return self.node("DepthToSpace", [self.x], blocksize=2,
                         mode=str(self.rng.choice(["DCR", "CRD"])))

    def _pool(self) -> str:
        rng, (_, h, w) = self.rng, self.shape
        k, stride = int(rng.choice([2, 3])), int(rng.choice([1, 2]))
        pads = [int(p) for p in rng.integers(0, k // 2 + 1, 4)]
        if min(h + pads[0] + pads[2], w + pads[1] + pads[3]) < k:
            return self.x
        attrs: dict[str, object] = {"kernel_shape": [k, k], "strides": [stride] * 2,
                                    "pads": pads, "ceil_mode": int(rng.integers(2))}
        if rng.integers(2):
            return self.node("MaxPool", [self.x], **attrs)
        return self.node("AveragePool", [self.x], count_include_pad=int(rng.integers(2)),
                         **attrs)

    def _pad(self) -> str:
        h, w = self.shape[1:]
        mode = str(self.rng.choice(["constant", "reflect", "edge"]))
        widest = min(h, w) - 1 if mode == "reflect" else 2
        amounts = [0, 0] + [int(a) for a in self.rng.integers(0, min(widest, 2) + 1, 2)]
        amounts = amounts + [0, 0] + [int(a) for a in self.rng.integers(0, min(widest, 2) + 1, 2)]
        inputs = [self.x, self.const(np.array(amounts, np.int64))]
        if mode == "constant":
            inputs.append(self.const(np.float32(self.rng.uniform(-1, 1))))
        return self.node("Pad", inputs, mode=mode)


SEEDS = range(40)
KINDS = {"sequence": (SequenceGraph, (6, 8)), "image": (ImageGraph, (3, 11, 12))}


@pytest.fixture(scope="module", params=[(k, s) for k in KINDS for s in SEEDS],
                ids=[f"{k}{s}" for k in KINDS for s in SEEDS])
def compiled(request):
    kind, seed = request.param
    cls, shape = KINDS[kind]
    graph = cls(seed, shape)
    model = graph.model()
    onnx.checker.check_model(model)
    wasm = modelc.export(modelc.from_onnx(model, dynamic={"X": {0: ("batch", 1, 4)}}))
    return model, wasm, shape, " -> ".join(graph.steps)


@pytest.mark.parametrize("kernels", ["relaxed", "host"])
def test_random_graph_matches_onnxruntime(compiled, kernels, compare_with_ort):
    model, wasm, shape, steps = compiled
    rng = np.random.default_rng(2)
    with runtime.load(wasm, kernels=kernels) as session:
        for batch in (1, 3):
            x = {"X": rng.standard_normal((batch, *shape)).astype(np.float32)}
            compare_with_ort(session.run(x), model, x, steps)
