"""``nn.functional`` against ``torch.nn.functional``, and the primitive protocol: composite
ops and whole layers, run on a tracer, reach numpy only through primitives."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest
from nn_parity import assert_close, copy_into, randomize

import nn
from nn import functional as F
from nn._dispatch import is_primitive

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(0)
X = (rng.standard_normal((2, 3, 5)) * 3).astype(np.float32)
IMAGE = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
VOLUME = rng.standard_normal((2, 4, 7, 6, 5)).astype(np.float32)
Y = (rng.standard_normal((3, 5)) * 3).astype(np.float32)
GRID = rng.uniform(-1.3, 1.3, (2, 4, 3, 2)).astype(np.float32)
POS = np.abs(X) + 0.1

# (name, ours, torch, inputs): the same arguments go to both.
CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = [
    ("exp", F.exp, torch.exp, (X / 3,)),
    ("log", F.log, torch.log, (POS,)),
    ("sqrt", F.sqrt, torch.sqrt, (POS,)),
    ("rsqrt", F.rsqrt, torch.rsqrt, (POS,)),
    ("tanh", F.tanh, torch.tanh, (X,)),
    ("erf", F.erf, torch.erf, (X,)),
    ("sigmoid", F.sigmoid, torch.sigmoid, (X * 20,)),
    ("abs", F.abs, torch.abs, (X,)),
    ("neg", F.neg, torch.neg, (X,)),
    ("relu", F.relu, TF.relu, (X,)),
    ("add", F.add, torch.add, (X, Y)),
    ("sub", F.sub, torch.sub, (X, Y)),
    ("mul", F.mul, torch.mul, (X, Y)),
    ("div", F.div, torch.div, (X, POS)),
    ("pow", F.pow, torch.pow, (POS, Y)),
    ("maximum", F.maximum, torch.maximum, (X, Y)),
    ("minimum", F.minimum, torch.minimum, (X, Y)),
    ("where", F.where, torch.where, (X > 0, X, Y)),
    ("gt", F.gt, torch.gt, (X, Y)),
    ("le", F.le, torch.le, (X, Y)),
    ("sum", lambda x: F.sum(x, dim=(0, 2), keepdim=True),
     lambda x: torch.sum(x, dim=(0, 2), keepdim=True), (X,)),
    ("mean", lambda x: F.mean(x, dim=-1), lambda x: torch.mean(x, dim=-1), (X,)),
    ("amax", lambda x: F.amax(x, dim=1), lambda x: torch.amax(x, dim=1), (X,)),
    ("softmax", lambda x: F.softmax(x, 1), lambda x: TF.softmax(x, 1), (X * 10,)),
    ("log_softmax", lambda x: F.log_softmax(x, -1), lambda x: TF.log_softmax(x, -1), (X,)),
    ("matmul", F.matmul, torch.matmul, (X, Y.T.copy())),
    ("linear", F.linear, TF.linear, (X, Y, Y[:, 0].copy())),
    ("concat", lambda a, b: F.concat([a, b], dim=1), lambda a, b: torch.cat([a, b], dim=1),
     (X, X)),
    ("split", lambda x: F.split(x, [1, 4], dim=2), lambda x: torch.split(x, [1, 4], dim=2),
     (X,)),
    ("slice", lambda x: F.slice(x, 2, 1, 5, 2), lambda x: x[:, :, 1:5:2], (X,)),
    ("pad", lambda x: F.pad(x, (1, 2, 0, -1)), lambda x: TF.pad(x, (1, 2, 0, -1)), (X,)),
    ("pad_reflect", lambda x: F.pad(x, (2, 1), mode="reflect"),
     lambda x: TF.pad(x, (2, 1), mode="reflect"), (X,)),
    ("permute", lambda x: F.permute(x, (2, 0, 1)), lambda x: x.permute(2, 0, 1), (X,)),
    ("transpose", lambda x: F.transpose(x, 0, 2), lambda x: x.transpose(0, 2), (X,)),
    ("gelu", F.gelu, TF.gelu, (X,)),
    ("gelu_tanh", lambda x: F.gelu(x, "tanh"), lambda x: TF.gelu(x, approximate="tanh"),
     (X,)),
    ("silu", F.silu, TF.silu, (X,)),
    ("hardswish", F.hardswish, TF.hardswish, (X,)),
    ("hardsigmoid", F.hardsigmoid, TF.hardsigmoid, (X,)),
    ("relu6", F.relu6, TF.relu6, (X,)),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2), (X,)),
    ("layer_norm", lambda x, w: F.layer_norm(x, (5,), w, w), 
     lambda x, w: TF.layer_norm(x, (5,), w, w), (X, Y[0].copy())),
    ("group_norm", lambda x: F.group_norm(x[None], 1), lambda x: TF.group_norm(x[None], 1),
     (X,)),
    ("instance_norm", F.instance_norm, TF.instance_norm, (X,)),
    ("sdpa", F.scaled_dot_product_attention, TF.scaled_dot_product_attention, (X, X, X)),
    ("sdpa_causal", lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True),
     lambda q: TF.scaled_dot_product_attention(q, q, q, is_causal=True), (X,)),
    ("sdpa_bool_mask", lambda q, m: F.scaled_dot_product_attention(q, q, q, m),
     lambda q, m: TF.scaled_dot_product_attention(q, q, q, m), (X, np.eye(3, dtype=bool))),
    ("conv1d", lambda x, w: F.conv1d(x, w, padding="same", dilation=2),
     lambda x, w: TF.conv1d(x, w, padding="same", dilation=2),
     (X, rng.standard_normal((4, 3, 3)).astype(np.float32))),
    ("conv3d", lambda x, w: F.conv3d(x, w, None, (2, 1, 1), (1, 0, 1), (1, 2, 1), 2),
     lambda x, w: TF.conv3d(x, w, None, (2, 1, 1), (1, 0, 1), (1, 2, 1), 2),
     (VOLUME, rng.standard_normal((6, 2, 3, 2, 3)).astype(np.float32))),
    ("conv_transpose3d", lambda x, w: F.conv_transpose3d(x, w, None, (2, 1, 2), (1, 0, 1),
                                                        (1, 0, 0), 2, (1, 2, 1)),
     lambda x, w: TF.conv_transpose3d(x, w, None, (2, 1, 2), (1, 0, 1), (1, 0, 0), 2,
                                      (1, 2, 1)),
     (VOLUME, rng.standard_normal((4, 3, 3, 2, 2)).astype(np.float32))),
    ("max_pool3d", lambda x: F.max_pool3d(x, (3, 2, 2), (2, 1, 2), 1, (1, 2, 1), True),
     lambda x: TF.max_pool3d(x, (3, 2, 2), (2, 1, 2), 1, (1, 2, 1), True), (VOLUME,)),
    ("avg_pool3d", lambda x: F.avg_pool3d(x, (2, 3, 2), (2, 2, 1), (1, 1, 0), True, False),
     lambda x: TF.avg_pool3d(x, (2, 3, 2), (2, 2, 1), (1, 1, 0), True, False), (VOLUME,)),
    *((name, getattr(F, name), getattr(TF, name), (X,))
      for name in ("elu", "selu", "celu", "softplus", "softsign", "mish", "hardshrink",
                   "softshrink")),
    *((name, getattr(F, name), getattr(torch, name), (X,))
      for name in ("floor", "ceil", "round", "sin", "cos", "sign", "trunc")),
    *((name, getattr(F, name), getattr(torch, name), (inputs,))
      for name, inputs in [("tan", X / 3), ("atan", X * 3), ("asin", np.tanh(X)),
                           ("acos", np.tanh(X)), ("sinh", X), ("cosh", X), ("asinh", X * 3),
                           ("acosh", POS + 1), ("atanh", np.tanh(X))]),
    ("isnan", F.isnan, torch.isnan, (np.array([1.0, np.nan, np.inf], np.float32),)),
    ("isinf", F.isinf, torch.isinf, (np.array([1.0, np.nan, np.inf, -np.inf], np.float32),)),
    ("round_ties", F.round, torch.round, (np.arange(-8, 8, dtype=np.float32) / 2,)),
    ("elu_alpha", lambda x: F.elu(x, 0.3), lambda x: TF.elu(x, 0.3), (X,)),
    ("celu_alpha", lambda x: F.celu(x, 2.0), lambda x: TF.celu(x, 2.0), (X,)),
    ("softplus_beta", lambda x: F.softplus(x, 2.0), lambda x: TF.softplus(x, 2.0), (X * 10,)),
    ("softshrink_lambd", lambda x: F.softshrink(x, 1.5), lambda x: TF.softshrink(x, 1.5),
     (X,)),
    ("fmod", lambda x: F.fmod(x, 1.3), lambda x: torch.fmod(x, 1.3), (X,)),
    ("log_softmax_inner", lambda x: F.log_softmax(x, 1), lambda x: TF.log_softmax(x, 1),
     (X,)),
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), lambda x: TF.pixel_shuffle(x, 2),
     (rng.standard_normal((2, 8, 3, 5)).astype(np.float32),)),
    ("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 3), lambda x: TF.pixel_unshuffle(x, 3),
     (rng.standard_normal((2, 2, 6, 9)).astype(np.float32),)),
    ("channel_shuffle", lambda x: F.channel_shuffle(x, 3), lambda x: TF.channel_shuffle(x, 3),
     (rng.standard_normal((2, 6, 3, 5)).astype(np.float32),)),
    ("cumsum", lambda x: F.cumsum(x, 1), lambda x: torch.cumsum(x, 1), (X,)),
    ("cumsum_last", lambda x: F.cumsum(x, -1), lambda x: torch.cumsum(x, -1), (X,)),
    ("triu", lambda x: F.triu(x, 1), lambda x: torch.triu(x, 1), (X,)),
    ("tril", lambda x: F.tril(x, -1), lambda x: torch.tril(x, -1), (X,)),
    ("argmax", lambda x: F.argmax(x, 1), lambda x: torch.argmax(x, 1), (X,)),
    ("argmin", lambda x: F.argmin(x, -1, keepdim=True),
     lambda x: torch.argmin(x, -1, keepdim=True), (X,)),
    ("rms_norm", lambda x, w: F.rms_norm(x, (3, 5), w, 1e-3),
     lambda x, w: TF.rms_norm(x, (3, 5), w, 1e-3),
     (X, rng.standard_normal((3, 5)).astype(np.float32))),
    ("grid_sample", lambda x: F.grid_sample(x, GRID, "bicubic", "border"),
     lambda x: TF.grid_sample(x, torch.from_numpy(GRID), "bicubic", "border",
                              align_corners=False), (IMAGE,)),
    ("interpolate", lambda x: F.interpolate(x, scale_factor=(1.5, 0.7), mode="bilinear"),
     lambda x: TF.interpolate(x, scale_factor=(1.5, 0.7), mode="bilinear"), (IMAGE,)),
    *((f"interpolate_{mode}", lambda x, m=mode: F.interpolate(x, size=(7, 3), mode=m),
       lambda x, m=mode: TF.interpolate(x, size=(7, 3), mode=m), (IMAGE,))
      for mode in ("nearest", "nearest-exact", "bicubic")),
    ("interpolate_align_corners",
     lambda x: F.interpolate(x, scale_factor=3, mode="bicubic", align_corners=True),
     lambda x: TF.interpolate(x, scale_factor=3, mode="bicubic", align_corners=True),
     (IMAGE,)),
    ("interpolate_recompute",
     lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
     lambda x: TF.interpolate(x, scale_factor=1.7, mode="bilinear",
                              recompute_scale_factor=True), (IMAGE,)),
    ("interpolate_trilinear",
     lambda x: F.interpolate(x[None, None], size=(3, 9, 2), mode="trilinear"),
     lambda x: TF.interpolate(x[None, None], size=(3, 9, 2), mode="trilinear"), (X,)),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_function_matches_torch(case: tuple[Any, ...]) -> None:
    _, ours, theirs, inputs = case
    assert_close(ours(*inputs), theirs(*(torch.from_numpy(np.ascontiguousarray(x))
                                         for x in inputs)))


def test_every_public_function_has_a_doctest() -> None:
    for name in F.__all__:
        if name != "PRIMITIVES":
            assert ">>>" in (inspect.getdoc(getattr(F, name)) or ""), name


class Tracer:
    """A minimal tracer: records primitive names, computes with their numpy bodies, and
    refuses direct numpy use (so a composite calling numpy on it fails)."""

    __array_ufunc__ = None
    log: ClassVar[list[str]] = []

    def __init__(self, value: np.ndarray) -> None:
        self.value = value

    @classmethod
    def __nn_function__(cls, name: str, signature: Any, bound: dict[str, Any]) -> Any:
        cls.log.append(name)

        def unwrap(v: Any) -> Any:
            if isinstance(v, Tracer):
                return v.value
            return type(v)(unwrap(i) for i in v) if isinstance(v, (list, tuple)) else v

        result = getattr(F, name).__nn_primitive__(**{k: unwrap(v) for k, v in bound.items()})
        return tuple(map(Tracer, result)) if isinstance(result, tuple) else Tracer(result)

    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    dtype = property(lambda self: self.value.dtype)
    __add__ = lambda self, other: F.add(self, other)
    __radd__ = lambda self, other: F.add(other, self)
    __sub__ = lambda self, other: F.sub(self, other)
    __rsub__ = lambda self, other: F.sub(other, self)
    __mul__ = lambda self, other: F.mul(self, other)
    __rmul__ = lambda self, other: F.mul(other, self)
    __truediv__ = lambda self, other: F.div(self, other)
    __matmul__ = lambda self, other: F.matmul(self, other)
    __neg__ = lambda self: F.neg(self)


def _traced(fn: Callable[..., Any], *inputs: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    Tracer.log = []
    out = fn(*(Tracer(x) for x in inputs), **kwargs)
    value = out[0] if isinstance(out, tuple) else out
    return value.value, Tracer.log


COMPOSITES = [name for name in F.__all__
              if name != "PRIMITIVES" and not is_primitive(getattr(F, name))]


@pytest.mark.parametrize("name", [case[0] for case in CASES if case[0] in COMPOSITES])
def test_composite_traces_to_primitives_only(name: str) -> None:
    _, ours, _, inputs = next(case for case in CASES if case[0] == name)
    value, log = _traced(ours, *inputs)
    assert log and set(log) <= set(F.PRIMITIVES)
    np.testing.assert_allclose(value, ours(*inputs), rtol=1e-6, atol=1e-6)


def test_layers_trace_to_primitives_and_match_eager() -> None:
    torch.manual_seed(0)
    layer = copy_into(nn.TransformerEncoderLayer(8, 2, 16, activation="gelu",
                                                 batch_first=True),
                      randomize(torch.nn.TransformerEncoderLayer(8, 2, 16, activation="gelu",
                                                                 batch_first=True))).eval()
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    padding = np.array([[False, False, True], [False] * 3])
    value, log = _traced(lambda t: layer(t, src_key_padding_mask=padding), x)
    np.testing.assert_allclose(value, layer(x, src_key_padding_mask=padding), rtol=1e-6)
    assert {"linear", "softmax", "layer_norm", "erf"} <= set(log) <= set(F.PRIMITIVES)

    config = nn.models.BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=16)
    bert = nn.models.BertModel(config).eval()
    ids, mask = np.array([[1, 5, 7]]), np.array([[1, 1, 0]])
    value, log = _traced(bert, ids, mask)
    np.testing.assert_allclose(value, bert(ids, mask)[0], rtol=1e-6)
    assert "embedding" in log and set(log) <= set(F.PRIMITIVES)


def test_functional_errors_name_the_offending_value() -> None:
    with pytest.raises(ValueError, match=r"approximate argument must be either none or tanh, "
                                         r"got 'fast'"):
        F.gelu(X, "fast")
    with pytest.raises(ValueError, match=r"unknown padding mode 'mirror'; available: "):
        F.pad(X, (1, 1), mode="mirror")
    with pytest.raises(ValueError, match=r"split sizes \[1, 1\] must sum to the length 5"):
        F.split(X, [1, 1], dim=2)
    with pytest.raises(ValueError, match=r"Expected 4D \(batched\) input to conv2d, but got "
                                         r"input of size: \[2, 3, 5\]"):
        F.conv2d(X, np.zeros((1, 3, 1, 1), np.float32))
    with pytest.raises(ValueError, match=r"output padding \(2, 2\) must be smaller"):
        F.conv_transpose2d(X[None], np.zeros((2, 1, 2, 2), np.float32), stride=2,
                           output_padding=2)
    with pytest.raises(ValueError, match="batch_norm outside training needs running_mean"):
        F.batch_norm(X, None, None)


@pytest.mark.parametrize("dim, largest", [(-1, True), (1, False), (0, True)])
def test_topk_matches_torch(dim: int, largest: bool) -> None:
    values, indices = F.topk(X, 2, dim, largest)
    want = torch.topk(torch.from_numpy(X), 2, dim, largest)
    np.testing.assert_array_equal(values, want.values.numpy())
    np.testing.assert_array_equal(indices, want.indices.numpy())
    assert indices.dtype == np.int64


def test_topk_with_k_beyond_the_axis_is_refused() -> None:
    with pytest.raises(ValueError, match=r"topk: k=6 is outside \[0, 5\] \(the size of dim "
                                         r"-1\)"):
        F.topk(X, 6)


def test_check_passes_its_input_through_or_raises_its_message() -> None:
    assert F.check(X, np.array([True])) is X
    assert F.check(X, np.array(False), expected=False) is X
    with pytest.raises(ValueError, match="the 8 kHz branch cannot run"):
        F.check(X, np.array(True), expected=False, message="the 8 kHz branch cannot run")


@pytest.mark.parametrize(("kernel", "dilation"), [((2, 2), (1, 1)), ((3, 4), (1, 1)),
                                                  ((2, 3), (1, 2))])
def test_max_pool2d_same_padding_matches_torch_on_a_tail_padded_input(kernel, dilation) -> None:
    """``padding='same'`` (stride 1): torch's max_pool2d over the input padded with -inf as
    conv2d's 'same' pads (an even window's extra row / column at the end)."""
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 9)).astype(np.float32)
    (top, bottom), (left, right) = F.conv_padding("same", kernel, (1, 1), dilation)
    padded = torch.nn.functional.pad(torch.from_numpy(x), (left, right, top, bottom),
                                     value=-float("inf"))
    expected = torch.nn.functional.max_pool2d(padded, kernel, 1, 0, dilation).numpy()
    np.testing.assert_array_equal(F.max_pool2d(x, kernel, 1, "same", dilation), expected)
