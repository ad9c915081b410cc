"""Differential tests: seeded random chains of ``nn.functional`` ops, compiled to wasm and
run on a kernel provider, against the same model run eagerly (numpy).

Each program starts from a (batch, S, D) input with a symbolic batch and applies 4-7 steps
drawn from a menu of shape-changing and elementwise ops, so that lowering meets
combinations the hand-written model tests do not: broadcasts against reshaped and permuted
views, reductions feeding matmuls, slices of concatenations, epilogue fusion after any op.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

import modelc
import nn
import nn.functional as F
import runtime

Shape = tuple[int, int]  # (S, D): the static axes after the batch
Step = Callable[[np.ndarray], np.ndarray]


def _constant(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)).astype(np.float32)


class Program(nn.Module):
    """The steps of one random program, with its weights as submodules and buffers."""

    def __init__(self, seed: int, shape: Shape):
        super().__init__()
        self.rng = np.random.default_rng(seed)
        self.steps: list[tuple[str, Step]] = []
        self.shape = shape
        for _ in range(int(self.rng.integers(4, 8))):
            self._add_step()

    def _buffer(self, value: np.ndarray) -> np.ndarray:
        name = f"c{len(self._buffers)}"
        self.register_buffer(name, value)
        return value

    def _linear(self, inputs: int, outputs: int) -> nn.Linear:
        layer = nn.Linear(inputs, outputs)
        for param in layer.parameters():
            param[...] = self.rng.uniform(-1, 1, param.shape) / math.sqrt(inputs)
        self.add_module(f"linear{len(self._modules)}", layer)
        return layer

    def _add_step(self) -> None:
        s, d = self.shape
        rng = self.rng
        options: dict[str, Callable[[], tuple[Step, Shape]]] = {
            "linear": lambda: self._linear_step(d, int(rng.choice([3, 5, 8, 16]))),
            "unary": lambda: (getattr(F, str(rng.choice(
                ["relu", "gelu", "sigmoid", "tanh", "silu", "neg", "abs"]))), (s, d)),
            "scale_shift": lambda: self._scale_shift(s, d),
            "residual": lambda: self._residual(d),
            "softmax": lambda: (lambda x, dim=int(rng.choice([1, 2])): F.softmax(x, dim), (s, d)),
            "layer_norm": lambda: self._layer_norm(d),
            "transpose": lambda: (lambda x: F.transpose(x, 1, 2), (d, s)),
            "reduce": lambda: self._reduce(s, d),
            "concat": lambda: self._concat(s, d),
            "slice": lambda: self._slice(s, d),
            "gram": lambda: (lambda x: F.matmul(x, F.transpose(x, 1, 2)) * (1 / math.sqrt(d)),
                             (s, s)),
            "reshape": lambda: self._reshape(s, d),
            "clamp": lambda: self._clamp(s, d),
            "ratio": lambda: (lambda x: x / (F.abs(x) + 1.0), (s, d)),
        }
        name = str(rng.choice(sorted(options)))
        step, self.shape = options[name]()
        self.steps.append((name, step))

    def _linear_step(self, d: int, out: int) -> tuple[Step, Shape]:
        layer = self._linear(d, out)
        return layer, (self.shape[0], out)

    def _scale_shift(self, s: int, d: int) -> tuple[Step, Shape]:
        scale_shape = [(d,), (1, s, 1), (s, d), (1, 1, 1)][int(self.rng.integers(4))]
        scale = self._buffer(_constant(self.rng, scale_shape))
        shift = self._buffer(_constant(self.rng, (d,)))
        return (lambda x: x * scale + shift), (s, d)

    def _residual(self, d: int) -> tuple[Step, Shape]:
        layer = self._linear(d, d)
        return (lambda x: x + F.tanh(layer(x))), self.shape

    def _layer_norm(self, d: int) -> tuple[Step, Shape]:
        weight = self._buffer(_constant(self.rng, (d,)))
        bias = self._buffer(_constant(self.rng, (d,)))
        return (lambda x: F.layer_norm(x, (d,), weight, bias)), self.shape

    def _reduce(self, s: int, d: int) -> tuple[Step, Shape]:
        dim = int(self.rng.choice([1, 2]))
        reduce = getattr(F, str(self.rng.choice(["sum", "mean", "amax"])))
        return (lambda x: reduce(x, dim, keepdim=True)), ((1, d) if dim == 1 else (s, 1))

    def _concat(self, s: int, d: int) -> tuple[Step, Shape]:
        dim = int(self.rng.choice([1, 2]))
        return (lambda x: F.concat([x, F.tanh(x)], dim)), ((2 * s, d) if dim == 1
                                                           else (s, 2 * d))

    def _slice(self, s: int, d: int) -> tuple[Step, Shape]:
        dim = 1 if s > 1 and (d == 1 or self.rng.integers(2)) else 2
        size = s if dim == 1 else d
        if size < 2:
            return (lambda x: x), (s, d)
        step = int(self.rng.choice([1, 2]))
        kept = len(range(1, size, step))
        return (lambda x: F.slice(x, dim, 1, size, step)), ((kept, d) if dim == 1
                                                             else (s, kept))

    def _reshape(self, s: int, d: int) -> tuple[Step, Shape]:
        if d % 2:
            return (lambda x: F.reshape(x, (-1, s * d, 1))), (s * d, 1)
        return (lambda x: F.reshape(x, (-1, s * 2, d // 2))), (s * 2, d // 2)

    def _clamp(self, s: int, d: int) -> tuple[Step, Shape]:
        bound = self._buffer(_constant(self.rng, (1, 1, d)))
        op = F.maximum if self.rng.integers(2) else F.minimum
        return (lambda x: op(x, bound)), (s, d)

    def forward(self, x: np.ndarray) -> np.ndarray:
        for _, step in self.steps:
            x = step(x)
        return x

    def describe(self) -> str:
        return " -> ".join(name for name, _ in self.steps)


SEEDS = range(40)


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def program(request):
    model = Program(request.param, (6, 8)).eval()
    wasm = modelc.export(model, (np.zeros((2, 6, 8), np.float32),),
                         dynamic={"input0": {0: ("batch", 1, 4)}})
    return model, wasm


@pytest.mark.parametrize("kernels", ["relaxed", "simd128", "scalar", "host"])
def test_random_program_matches_eager(program, kernels):
    model, wasm = program
    rng = np.random.default_rng(1)
    with runtime.load(wasm, kernels=kernels) as session:
        for batch in (1, 3):
            x = rng.standard_normal((batch, 6, 8)).astype(np.float32)
            got, ref = session.run(x)["output0"], model(x)
            assert got.shape == ref.shape, model.describe()
            scale = max(float(np.abs(ref).max()), 1e-6)
            assert np.abs(got - ref).max() <= 1e-4 * scale, model.describe()
