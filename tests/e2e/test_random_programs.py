"""Differential tests: seeded random chains of ``nn.functional`` ops, compiled to wasm and
run on a kernel provider, against the same model run eagerly (numpy).

Each program starts from an input with a symbolic batch and applies 4-7 steps drawn from a
menu, so that lowering meets combinations the hand-written model tests do not; one entry
draws from the forwards written with ndarray methods and numpy calls (``forward_cases``).
Sequence programs ((batch, S, D)): broadcasts against reshaped and permuted views,
reductions feeding matmuls, slices of concatenations, running sums, log-softmax and RMS
norms on any axis, recurrent layers over a (symbolic) length, epilogue fusion after any op.
Image programs ((batch, C, H, W)): convolutions and transposed convolutions of random
kernel, stride, padding, dilation and groups, batch norms to fold, pooling (adaptive too),
padding in every mode, interpolation of every mode, pixel (un)shuffles, residual branches,
and the image as a volume through 3-D convolutions and pools.
"""

from __future__ import annotations

import io
import math
import shutil
from collections.abc import Callable
from functools import partial

import numpy as np
import pytest
from executors import PROVIDERS
from forward_cases import STEPS, SYMBOLIC_STEPS
from standalone_runners import npy, run_node, run_wasi

import modelc
import nn
import nn.functional as F
import runtime

Step = Callable[[np.ndarray], np.ndarray]


def _constant(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)).astype(np.float32)


class RandomProgram(nn.Module):
    """4-7 steps drawn from ``options()``, with their weights as buffers and submodules.
    Each step's output shape is measured by running it eagerly on zeros, so no shape rule
    is written twice."""

    def __init__(self, seed: int, shape: tuple[int, ...]):
        super().__init__()
        self.rng = np.random.default_rng(seed)
        self.steps: list[tuple[str, Step]] = []
        self.shape = shape  # the axes after the batch, at the example's sizes
        self.probes = [np.zeros((1, *shape), np.float32)]
        for _ in range(int(self.rng.integers(4, 8))):
            options = self.options()
            name = str(self.rng.choice(sorted(options)))
            step = options[name]()
            self.probes = [step(probe) for probe in self.probes]
            self.shape = self.probes[0].shape[1:]
            self.steps.append((name, step))

    def options(self) -> dict[str, Callable[[], Step]]:
        raise NotImplementedError

    def buffer(self, value: np.ndarray) -> np.ndarray:
        self.register_buffer(f"c{len(self._buffers)}", value)
        return value

    def weight(self, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        return self.buffer((self.rng.uniform(-1, 1, shape) / math.sqrt(fan_in))
                           .astype(np.float32))

    def forward(self, x: np.ndarray) -> np.ndarray:
        for _, step in self.steps:
            x = step(x)
        return x

    def describe(self) -> str:
        return " -> ".join(name for name, _ in self.steps)


class SequenceProgram(RandomProgram):
    """Steps over (batch, S, D)."""

    def options(self) -> dict[str, Callable[[], Step]]:
        rng, (s, d) = self.rng, self.shape
        return {
            "linear": lambda: self._linear(d, int(rng.choice([3, 5, 8, 16]))),
            "unary": lambda: getattr(F, str(rng.choice(
                ["relu", "gelu", "sigmoid", "tanh", "silu", "neg", "abs", "elu", "selu",
                 "celu", "softplus", "softsign", "mish", "sin", "cos", "atan", "asinh"]))),
            "scale_shift": self._scale_shift,
            "cumsum": lambda: partial(F.cumsum, dim=int(rng.choice([1, 2]))),
            "log_softmax": lambda: partial(F.log_softmax, dim=int(rng.choice([1, 2]))),
            "rms_norm": lambda: partial(F.rms_norm, normalized_shape=(d,),
                                        weight=self.buffer(_constant(rng, (d,))), eps=1e-5),
            "residual": self._residual,
            "softmax": lambda: partial(F.softmax, dim=int(rng.choice([1, 2]))),
            "layer_norm": self._layer_norm,
            "transpose": lambda: (lambda x: F.transpose(x, 1, 2)),
            "reduce": self._reduce,
            "concat": self._concat,
            "slice": self._slice,
            "gram": lambda: (lambda x: F.matmul(x, F.transpose(x, 1, 2)) * (1 / math.sqrt(d))),
            "reshape": lambda: (lambda x: F.reshape(x, (-1, s * 2, d // 2)) if d % 2 == 0
                                else F.reshape(x, (-1, s * d, 1))),
            "clamp": self._clamp,
            "ratio": lambda: (lambda x: x / (F.abs(x) + 1.0)),
            "numpy": lambda: STEPS[str(rng.choice(sorted(STEPS)))],
            "recurrent": self._recurrent,
        }

    def _recurrent(self) -> Step:
        """A batch-first LSTM, GRU or RNN over axis 1, maybe bidirectional: its outputs."""
        kind = str(self.rng.choice(["LSTM", "GRU", "RNN"]))
        hidden = int(self.rng.choice([3, 5, 8]))
        layer = getattr(nn, kind)(self.shape[-1], hidden, batch_first=True,
                                  bidirectional=bool(self.rng.integers(2)))
        for param in layer.parameters():
            param[...] = self.rng.uniform(-1, 1, param.shape) / math.sqrt(hidden)
        self.add_module(f"recurrent{len(self._modules)}", layer)
        return lambda x: layer(x)[0]

    def _linear(self, inputs: int, outputs: int) -> nn.Linear:
        layer = nn.Linear(inputs, outputs)
        for param in layer.parameters():
            param[...] = self.rng.uniform(-1, 1, param.shape) / math.sqrt(inputs)
        self.add_module(f"linear{len(self._modules)}", layer)
        return layer

    def _scale_shift(self) -> Step:
        s, d = self.shape
        scale_shape = [(d,), (1, s, 1), (s, d), (1, 1, 1)][int(self.rng.integers(4))]
        scale = self.buffer(_constant(self.rng, scale_shape))
        shift = self.buffer(_constant(self.rng, (d,)))
        return lambda x: x * scale + shift

    def _residual(self) -> Step:
        layer = self._linear(self.shape[1], self.shape[1])
        return lambda x: x + F.tanh(layer(x))

    def _layer_norm(self) -> Step:
        d = self.shape[1]
        weight, bias = (self.buffer(_constant(self.rng, (d,))) for _ in range(2))
        return lambda x: F.layer_norm(x, (d,), weight, bias)

    def _reduce(self) -> Step:
        dim = int(self.rng.choice([1, 2]))
        reduce = getattr(F, str(self.rng.choice(["sum", "mean", "amax"])))
        return lambda x: reduce(x, dim, keepdim=True)

    def _concat(self) -> Step:
        dim = int(self.rng.choice([1, 2]))
        return lambda x: F.concat([x, F.tanh(x)], dim)

    def _slice(self) -> Step:
        dim = int(self.rng.choice([1, 2]))
        size, step = self.shape[dim - 1], int(self.rng.choice([1, 2]))
        return (lambda x: x) if size < 2 else (lambda x: F.slice(x, dim, 1, size, step))

    def _clamp(self) -> Step:
        bound = self.buffer(_constant(self.rng, (1, 1, self.shape[1])))
        op = F.maximum if self.rng.integers(2) else F.minimum
        return lambda x: op(x, bound)


class SymbolicSequenceProgram(SequenceProgram):
    """Steps over (batch, seq, D) with ``seq`` symbolic: a second probe one token longer
    tells which axes follow it, and steps that need a static axis (a linear's features,
    layer norm, a constant's shape, concat and slice, whose sizes must be fixed) only draw
    on static ones."""

    def __init__(self, seed: int, shape: tuple[int, ...]):
        self.symbolic: set[int] = {0}
        super().__init__(seed, shape)

    def options(self) -> dict[str, Callable[[], Step]]:
        if len(self.probes) == 1:  # the longer probe, once nn.Module is set up
            self.probes.append(np.zeros((1, self.shape[0] + 1, *self.shape[1:]), np.float32))
        else:
            self.symbolic = {i for i, (a, b) in enumerate(zip(self.probes[0].shape[1:],
                                                              self.probes[1].shape[1:]))
                             if a != b}
        rng, last = self.rng, len(self.shape) - 1
        static_last = last not in self.symbolic
        d = self.shape[last]
        options: dict[str, Callable[[], Step]] = {
            "unary": lambda: getattr(F, str(rng.choice(["relu", "gelu", "sigmoid", "tanh"]))),
            "softmax": lambda: partial(F.softmax, dim=int(rng.choice([1, 2]))),
            "transpose": lambda: (lambda x: F.transpose(x, 1, 2)),
            "reduce": lambda: partial(getattr(F, str(rng.choice(["sum", "mean", "amax"]))),
                                      dim=int(rng.choice([1, 2])), keepdim=True),
            "gram": lambda: (lambda x: F.matmul(x, F.transpose(x, 1, 2)) * 0.3),
            "ratio": lambda: (lambda x: x / (F.abs(x) + 1.0)),
            "numpy": lambda: SYMBOLIC_STEPS[str(rng.choice(sorted(SYMBOLIC_STEPS)))],
        }
        static = [axis + 1 for axis in range(len(self.shape)) if axis not in self.symbolic]
        if static:
            options["concat"] = lambda: partial(lambda x, dim: F.concat([x, F.tanh(x)], dim),
                                                dim=int(rng.choice(static)))
            options["every_other"] = lambda: partial(lambda x, dim: F.slice(x, dim, 0, None, 2),
                                                     dim=int(rng.choice(static)))
        if static_last:
            options.update({
                "linear": lambda: self._linear(d, int(rng.choice([3, 8]))),
                "layer_norm": self._layer_norm,
                "residual": self._residual,
                "recurrent": self._recurrent,
                "scale_shift": self._scale_shift if 0 not in self.symbolic
                else lambda: (lambda x: x * 1.5 - 0.25),
            })
        return options


class ImageProgram(RandomProgram):
    """Steps over (batch, C, H, W)."""

    def options(self) -> dict[str, Callable[[], Step]]:
        return {
            "conv": self._conv,
            "batch_norm": self._batch_norm,
            "activation": lambda: getattr(F, str(self.rng.choice(
                ["relu", "relu6", "hardswish", "sigmoid", "silu", "tanh", "elu", "selu",
                 "mish", "softplus", "softsign"]))),
            "interpolate": self._interpolate,
            "pixel_shuffle": self._pixel_shuffle,
            "residual": self._residual,
            "pool": self._pool,
            "adaptive_pool": self._adaptive_pool,
            "pad": self._pad,
            "upsample": self._conv_transpose,
            "concat": lambda: (lambda x: F.concat([x, F.relu(x)], 1)),
            "channel_affine": self._channel_affine,
            "volume": self._volume,
        }

    def _volume(self) -> Step:
        """The image as a (batch, 1, C, H, W) volume through conv3d (2 filters), max_pool3d
        or avg_pool3d of 'same' padding, its channels folded back in."""
        rng, (c, h, w) = self.rng, self.shape
        kernel = tuple(int(k) for k in rng.choice([1, 3], 3))
        padding = tuple(k // 2 for k in kernel)
        op = str(rng.choice(["conv3d", "max_pool3d", "avg_pool3d"]))
        if op == "conv3d":
            weight = self.weight((2, 1, *kernel), math.prod(kernel))
            bias = self.weight((2,), 1)
            pool = partial(F.conv3d, weight=weight, bias=bias, padding=padding)
        else:
            pool = partial(getattr(F, op), kernel_size=kernel, stride=1, padding=padding)
        return lambda x: F.reshape(pool(F.unsqueeze(x, 1)), (x.shape[0], -1, h, w))

    def _conv(self) -> Step:
        rng, (c, h, w) = self.rng, self.shape
        out = int(rng.choice([2, 4, 6, 8]))
        groups = int(rng.choice([g for g in (1, 2, c) if c % g == 0 and out % g == 0
                                 and (g != c or out == c)]))
        k, stride = int(rng.choice([1, 3, 5])), int(rng.choice([1, 2]))
        dilation = int(rng.choice([1, 2])) if k > 1 else 1
        padding = int(rng.integers(0, k // 2 + 1))
        if min(h, w) + 2 * padding < dilation * (k - 1) + 1:
            return lambda x: x
        weight = self.weight((out, c // groups, k, k), c // groups * k * k)
        bias = self.weight((out,), 1) if rng.integers(2) else None
        return lambda x: F.conv2d(x, weight, bias, stride, padding, dilation, groups)

    def _batch_norm(self) -> Step:
        c = self.shape[0]
        mean, gamma, beta = (self.weight((c,), 1) for _ in range(3))
        var = self.weight((c,), 1) ** 2 + 0.5
        return lambda x: F.batch_norm(x, mean, var, gamma, beta)

    def _residual(self) -> Step:
        c = self.shape[0]
        weight = self.weight((c, c, 3, 3), 9 * c)
        return lambda x: F.relu(x + F.conv2d(x, weight, None, 1, 1))

    def _pool(self) -> Step:
        rng, (_, h, w) = self.rng, self.shape
        k, stride = int(rng.choice([2, 3])), int(rng.choice([1, 2]))
        padding, ceil = int(rng.integers(0, k // 2 + 1)), bool(rng.integers(2))
        if min(h, w) + 2 * padding < k:
            return lambda x: x
        if rng.integers(2):
            return lambda x: F.max_pool2d(x, k, stride, padding, ceil_mode=ceil)
        include = bool(rng.integers(2))
        return lambda x: F.avg_pool2d(x, k, stride, padding, ceil_mode=ceil,
                                      count_include_pad=include)

    def _adaptive_pool(self) -> Step:
        h, w = self.shape[1:]
        size = (int(self.rng.integers(1, h + 1)), int(self.rng.integers(1, w + 1)))
        return lambda x: F.adaptive_avg_pool2d(x, size)

    def _pad(self) -> Step:
        mode = str(self.rng.choice(["constant", "reflect", "replicate", "circular"]))
        h, w = self.shape[1:]
        widest = {"reflect": min(h, w) - 1, "circular": min(h, w)}.get(mode, 2)
        amounts = tuple(int(a) for a in self.rng.integers(0, min(widest, 2) + 1, 4))
        if mode == "constant":
            value = float(self.rng.uniform(-1, 1))
            return lambda x: F.pad(x, amounts, value=value)
        return lambda x: F.pad(x, amounts, mode=mode)

    def _conv_transpose(self) -> Step:
        rng, c = self.rng, self.shape[0]
        out = int(rng.choice([2, 4, 6]))
        groups = int(rng.choice([g for g in (1, 2, c) if c % g == 0 and out % g == 0
                                 and (g != c or out == c)]))
        k, stride = int(rng.choice([1, 2, 3, 4])), int(rng.choice([1, 2]))
        dilation = int(rng.choice([1, 2])) if k > 1 else 1
        padding = int(rng.integers(0, dilation * (k - 1) // 2 + 1))
        extra = int(rng.integers(0, max(stride, dilation)))
        weight = self.weight((c, out // groups, k, k), max(1, c * k * k // stride ** 2))
        bias = self.weight((out,), 1) if rng.integers(2) else None
        return lambda x: F.conv_transpose2d(x, weight, bias, stride, padding, extra, groups,
                                            dilation)

    def _interpolate(self) -> Step:
        """A resize of every mode to random sizes from half to twice (at most 24)."""
        rng, (_, h, w) = self.rng, self.shape
        size = tuple(int(rng.integers(max(1, n // 2), min(2 * n, 24) + 1)) for n in (h, w))
        mode = str(rng.choice(["nearest", "nearest-exact", "bilinear", "bicubic"]))
        corners = bool(rng.integers(2)) if mode in ("bilinear", "bicubic") else None
        return partial(F.interpolate, size=size, mode=mode, align_corners=corners)

    def _pixel_shuffle(self) -> Step:
        """Sub-pixels into channels where H and W are even, else channels into sub-pixels
        where C is a multiple of 4, else nothing."""
        c, h, w = self.shape
        if h % 2 == 0 and w % 2 == 0 and c <= 8:
            return partial(F.pixel_unshuffle, downscale_factor=2)
        return partial(F.pixel_shuffle, upscale_factor=2) if c % 4 == 0 else (lambda x: x)

    def _channel_affine(self) -> Step:
        c = self.shape[0]
        scale, shift = self.weight((1, c, 1, 1), 1), self.weight((1, c, 1, 1), 1)
        return lambda x: x * scale + shift


SEEDS = range(40)
KINDS = {"sequence": (SequenceProgram, (6, 8)), "image": (ImageProgram, (3, 11, 12))}
SYMBOLIC_SEQ = {"input0": {0: ("batch", 1, 4), 1: ("seq", 1, 10)}}


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program_with_symbolic_sequence_matches_eager(seed):
    """Sequence programs whose token axis is symbolic, run at three lengths."""
    model = SymbolicSequenceProgram(seed, (6, 8)).eval()
    wasm = modelc.export(model, (np.zeros((2, 6, 8), np.float32),), dynamic=SYMBOLIC_SEQ)
    rng = np.random.default_rng(1)
    with runtime.load(wasm) as session:
        for batch, seq in ((1, 1), (3, 10), (2, 7)):
            x = rng.standard_normal((batch, seq, 8)).astype(np.float32)
            got, ref = session.run(x)["output0"], model(x)
            assert got.shape == ref.shape, model.describe()
            scale = max(float(np.abs(ref).max()), 1e-6)
            assert np.abs(got - ref).max() <= 1e-4 * scale, model.describe()


@pytest.fixture(scope="module", params=[(k, s) for k in KINDS for s in SEEDS],
                ids=[f"{k}{s}" for k in KINDS for s in SEEDS])
def program(request):
    kind, seed = request.param
    cls, shape = KINDS[kind]
    model = cls(seed, shape).eval()
    wasm = modelc.export(model, (np.zeros((2, *shape), np.float32),),
                         dynamic={"input0": {0: ("batch", 1, 4)}})
    return model, wasm, shape


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_random_program_matches_eager(program, kernels):
    model, wasm, shape = program
    rng = np.random.default_rng(1)
    with runtime.load(wasm, kernels=kernels) as session:
        for batch in (1, 3):
            x = rng.standard_normal((batch, *shape)).astype(np.float32)
            got, ref = session.run(x)["output0"], model(x)
            assert got.shape == ref.shape, model.describe()
            scale = max(float(np.abs(ref).max()), 1e-6)
            assert np.abs(got - ref).max() <= 1e-4 * scale, model.describe()


STANDALONE_SEEDS = range(8)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("seed", STANDALONE_SEEDS)
def test_random_program_standalone_matches_eager(kind, seed, tmp_path):
    """The standalone export (kernels linked in, WASI only) under wasmnn's WASI, and under
    Node's WASI with the same bits when Node is installed."""
    cls, shape = KINDS[kind]
    model = cls(seed, shape).eval()
    wasm = modelc.export(model, (np.zeros((2, *shape), np.float32),), standalone=True,
                         dynamic={"input0": {0: ("batch", 1, 4)}})
    x = np.random.default_rng(1).standard_normal((3, *shape)).astype(np.float32)
    code, stdout, stderr = run_wasi(wasm, npy(x))
    assert code == 0, stderr
    got, ref = np.load(io.BytesIO(stdout)), model(x)
    assert got.shape == ref.shape, model.describe()
    assert np.abs(got - ref).max() <= 1e-4 * max(float(np.abs(ref).max()), 1e-6), model.describe()
    if shutil.which("node") is not None and seed < 3:
        path = tmp_path / "model.wasm"
        path.write_bytes(wasm)
        np.testing.assert_array_equal(np.load(io.BytesIO(run_node(path, npy(x)))), got)
