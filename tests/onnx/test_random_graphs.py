"""Differential tests: seeded random ONNX graphs (opset 17) imported, compiled to wasm and
run, against onnxruntime on the same graph.

Each graph takes X (batch, 6, 8) with a symbolic batch and chains 4-7 steps of default-
domain ops (MatMul, broadcasting arithmetic, activations, Softmax on any axis,
LayerNormalization, Transpose, reductions, Concat, Slice, Reshape, Clip, Pow, Sqrt,
Unsqueeze/Squeeze, attention-like products), so the importer and the compiler meet
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
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
SHAPE = (6, 8)  # the static axes after the batch


class RandomGraph:
    """Nodes and initializers of one random graph; ``shape`` tracks the static axes of the
    current value ``x``, each step's rule written beside the node it emits."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.steps: list[str] = []
        self.x, self.shape = "X", SHAPE
        for _ in range(int(self.rng.integers(4, 8))):
            options = self.options()
            name = str(self.rng.choice(sorted(options)))
            self.x, self.shape = options[name]()
            self.steps.append(name)

    def const(self, value: np.ndarray) -> str:
        name = f"c{len(self.initializers)}"
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def weight(self, *shape: int) -> str:
        return self.const((self.rng.uniform(-1, 1, shape) / math.sqrt(shape[0]))
                          .astype(np.float32))

    def node(self, op: str, inputs: list[str], **attrs: object) -> str:
        out = f"v{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def options(self) -> dict[str, Callable[[], tuple[str, tuple[int, int]]]]:
        x, (s, d), rng = self.x, self.shape, self.rng
        return {
            "matmul": lambda: self._matmul(int(rng.choice([3, 5, 8, 16]))),
            "bias_activation": lambda: (self.node(str(rng.choice(
                ["Relu", "Sigmoid", "Tanh", "Erf", "Abs", "Neg"])),
                [self.node("Add", [x, self.weight(d)])]), (s, d)),
            "broadcast": self._broadcast,
            "softmax": lambda: (self.node("Softmax", [x], axis=int(rng.choice([1, 2, -1]))),
                                (s, d)),
            "layer_norm": lambda: (self.node("LayerNormalization",
                                             [x, self.weight(d), self.weight(d)], axis=-1),
                                   (s, d)),
            "transpose": lambda: (self.node("Transpose", [x], perm=[0, 2, 1]), (d, s)),
            "reduce": self._reduce,
            "concat": self._concat,
            "slice": self._slice,
            "reshape": lambda: ((self.node("Reshape", [x, self.const(
                np.array([0, 2 * s, d // 2], np.int64))]), (2 * s, d // 2)) if d % 2 == 0
                else (self.node("Reshape", [x, self.const(np.array([0, s * d, 1], np.int64))]),
                      (s * d, 1))),
            "clip": lambda: (self.node("Clip", [x, self.const(np.float32(-0.5)),
                                                self.const(np.float32(0.7))]), (s, d)),
            "ratio": lambda: (self.node("Div", [x, self.node("Add", [
                self.node("Abs", [x]), self.const(np.float32(1.0))])]), (s, d)),
            "square": lambda: (self.node("Pow", [self.node("Tanh", [x]),
                                                 self.const(np.float32(2.0))]), (s, d)),
            "sqrt": lambda: (self.node("Sqrt", [self.node("Add", [
                self.node("Abs", [x]), self.const(np.float32(1.0))])]), (s, d)),
            "unsqueeze_squeeze": lambda: (self.node("Squeeze", [
                self.node("Unsqueeze", [x, self.const(np.array([1], np.int64))]),
                self.const(np.array([1], np.int64))]), (s, d)),
            "attention_scores": lambda: (self.node("Mul", [
                self.node("MatMul", [x, self.node("Transpose", [x], perm=[0, 2, 1])]),
                self.const(np.float32(1 / math.sqrt(d)))]), (s, s)),
            "residual": lambda: (self.node("Add", [x, self.node("Tanh", [
                self.node("MatMul", [x, self.weight(d, d)])])]), (s, d)),
        }

    def _matmul(self, out: int) -> tuple[str, tuple[int, int]]:
        return self.node("MatMul", [self.x, self.weight(self.shape[1], out)]), (
            self.shape[0], out)

    def _broadcast(self) -> tuple[str, tuple[int, int]]:
        s, d = self.shape
        shape = [(d,), (s, 1), (1,), (s, d)][int(self.rng.integers(4))]
        op = str(self.rng.choice(["Add", "Mul", "Sub"]))
        return self.node(op, [self.x, self.weight(*shape)]), self.shape

    def _reduce(self) -> tuple[str, tuple[int, int]]:
        s, d = self.shape
        axis = int(self.rng.choice([1, 2]))
        op = str(self.rng.choice(["ReduceMean", "ReduceMax", "ReduceSum"]))
        if op == "ReduceSum":  # axes became an input in opset 13, the others in 18
            out = self.node(op, [self.x, self.const(np.array([axis], np.int64))], keepdims=1)
        else:
            out = self.node(op, [self.x], axes=[axis], keepdims=1)
        return out, ((1, d) if axis == 1 else (s, 1))

    def _concat(self) -> tuple[str, tuple[int, int]]:
        s, d = self.shape
        axis = int(self.rng.choice([1, 2]))
        out = self.node("Concat", [self.x, self.node("Tanh", [self.x])], axis=axis)
        return out, ((2 * s, d) if axis == 1 else (s, 2 * d))

    def _slice(self) -> tuple[str, tuple[int, int]]:
        s, d = self.shape
        axis = int(self.rng.choice([1, 2]))
        size, step = (s, d)[axis - 1], int(self.rng.choice([1, 2]))
        if size < 2:
            return self.x, self.shape
        out = self.node("Slice", [self.x] + [self.const(np.array([v], np.int64))
                                             for v in (1, size, axis, step)])
        kept = len(range(1, size, step))
        return out, ((kept, d) if axis == 1 else (s, kept))

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes + [helper.make_node("Identity", [self.x], ["Y"])], "random",
            [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", *SHAPE])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", *self.shape])],
            self.initializers)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                 ir_version=8)


SEEDS = range(40)


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def compiled(request):
    graph = RandomGraph(request.param)
    model = graph.model()
    onnx.checker.check_model(model)
    wasm = modelc.export(modelc.from_onnx(model, dynamic={"X": {0: ("batch", 1, 4)}}))
    return model, wasm, " -> ".join(graph.steps)


@pytest.mark.parametrize("kernels", ["relaxed", "host"])
def test_random_graph_matches_onnxruntime(compiled, kernels, compare_with_ort):
    model, wasm, steps = compiled
    rng = np.random.default_rng(2)
    with runtime.load(wasm, kernels=kernels) as session:
        for batch in (1, 3):
            x = {"X": rng.standard_normal((batch, *SHAPE)).astype(np.float32)}
            compare_with_ort(session.run(x), model, x, steps)
