"""Every layer against torch 2.13 CPU: same constructor arguments, same state dict keys and
shapes, outputs within float32 tolerance in eval (and, where deterministic, train) mode."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from nn_parity import assert_close, copy_into, numpy_state, randomize, to_torch

import nn

torch = pytest.importorskip("torch")

# (class name, args, kwargs, input shape); the same call builds ours and torch's.
CASES: list[tuple[str, tuple[Any, ...], dict[str, Any], tuple[int, ...]]] = [
    ("Linear", (6, 4), {}, (3, 5, 6)),
    ("Linear", (6, 4), {"bias": False}, (3, 6)),
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1}, (2, 4, 11)),
    ("Conv1d", (4, 6, 4), {"padding": "same", "dilation": 2, "groups": 2}, (2, 4, 9)),
    ("Conv2d", (3, 8, 3), {}, (2, 3, 9, 9)),
    ("Conv2d", (4, 8, (3, 2)), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2),
                                "groups": 2, "bias": False}, (2, 4, 10, 9)),
    ("Conv2d", (4, 4, 4), {"padding": "same", "groups": 4}, (1, 4, 7, 8)),
    ("Conv2d", (3, 5, 3), {"padding": "valid"}, (1, 3, 6, 6)),
    ("Conv2d", (3, 5, 3), {"padding": 2, "padding_mode": "reflect"}, (1, 3, 6, 7)),
    ("Conv2d", (3, 5, 3), {"padding": 1, "padding_mode": "circular"}, (1, 3, 6, 7)),
    ("Conv2d", (3, 5, 3), {"padding": 1, "padding_mode": "replicate"}, (1, 3, 6, 7)),
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1},
     (2, 4, 5, 6)),
    ("ConvTranspose2d", (4, 6, (2, 3)), {"stride": (1, 2), "groups": 2, "dilation": 2,
                                         "bias": False}, (1, 4, 4, 5)),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1}, (2, 3, 9, 8)),
    ("MaxPool2d", (2,), {"ceil_mode": True}, (1, 2, 7, 5)),
    ("MaxPool2d", ((3, 2),), {"stride": 1, "dilation": 2}, (1, 2, 8, 7)),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1}, (2, 3, 9, 8)),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False,
                         "ceil_mode": True}, (1, 2, 8, 7)),
    ("AvgPool2d", (2,), {"ceil_mode": True, "divisor_override": 3}, (1, 2, 7, 5)),
    ("AdaptiveAvgPool2d", ((3, 4),), {}, (2, 3, 7, 9)),
    ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 5, 5)),
    ("AdaptiveAvgPool2d", ((None, 2),), {}, (1, 2, 5, 7)),
    ("BatchNorm1d", (5,), {}, (4, 5)),
    ("BatchNorm1d", (5,), {"affine": False}, (4, 5, 3)),
    ("BatchNorm1d", (5,), {"bias": False}, (4, 5, 3)),
    ("BatchNorm2d", (3,), {"momentum": None}, (2, 3, 4, 5)),
    ("BatchNorm2d", (3,), {"track_running_stats": False}, (2, 3, 4, 5)),
    ("LayerNorm", (6,), {}, (2, 3, 6)),
    ("LayerNorm", ((3, 6),), {"eps": 1e-3, "bias": False}, (2, 3, 6)),
    ("LayerNorm", (6,), {"elementwise_affine": False}, (4, 6)),
    ("GroupNorm", (2, 6), {}, (2, 6, 3, 4)),
    ("GroupNorm", (3, 6), {"affine": False}, (2, 6, 5)),
    ("GroupNorm", (3, 6), {"bias": False}, (2, 6, 5)),
    ("InstanceNorm2d", (3,), {}, (2, 3, 4, 5)),
    ("InstanceNorm2d", (3,), {"affine": True}, (3, 4, 5)),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True}, (2, 3, 4, 5)),
    ("Dropout", (0.3,), {}, (4, 5)),
    ("ReLU", (), {}, (3, 7)),
    ("ReLU6", (), {}, (3, 7)),
    ("LeakyReLU", (0.2,), {}, (3, 7)),
    ("GELU", (), {}, (3, 7)),
    ("GELU", (), {"approximate": "tanh"}, (3, 7)),
    ("SiLU", (), {}, (3, 7)),
    ("Sigmoid", (), {}, (3, 7)),
    ("Tanh", (), {}, (3, 7)),
    ("Hardswish", (), {}, (3, 7)),
    ("Softmax", (1,), {}, (3, 7)),
    ("Softmax", (), {"dim": -1}, (2, 3, 7)),
    ("LogSoftmax", (0,), {}, (3, 7)),
    ("ELU", (0.5,), {}, (3, 7)),
    ("CELU", (), {"alpha": 2.0}, (3, 7)),
    ("SELU", (), {}, (3, 7)),
    ("Softplus", (2.0,), {}, (3, 7)),
    ("Softsign", (), {}, (3, 7)),
    ("Mish", (), {}, (3, 7)),
    ("Hardshrink", (), {}, (3, 7)),
    ("Softshrink", (1.5,), {}, (3, 7)),
    ("PixelShuffle", (2,), {}, (2, 8, 3, 4)),
    ("PixelUnshuffle", (2,), {}, (2, 3, 4, 6)),
    ("ChannelShuffle", (3,), {}, (2, 6, 3, 4)),
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}, (2, 3, 4, 5)),
    ("Upsample", ((5, 3),), {"mode": "nearest"}, (2, 3, 4, 5)),
    ("UpsamplingNearest2d", (), {"scale_factor": 3}, (2, 3, 4, 5)),
    ("UpsamplingBilinear2d", ((7, 3),), {}, (2, 3, 4, 5)),
    ("Flatten", (), {}, (2, 3, 4, 5)),
    ("Flatten", (0, 2), {}, (2, 3, 4, 5)),
    ("Identity", (54,), {"unused": "x"}, (2, 3)),
]


def _input(shape: tuple[int, ...]) -> np.ndarray:
    # NOTE: scaled so that activations see both their saturated and their linear ranges.
    return (np.random.default_rng(1).standard_normal(shape) * 3).astype(np.float32)


def _ids(case: tuple[Any, ...]) -> str:
    name, args, kwargs, _ = case
    return f"{name}{args}{kwargs}".replace(" ", "")


@pytest.mark.parametrize("case", CASES, ids=[_ids(case) for case in CASES])
def test_layer_matches_torch_in_eval_mode(case: tuple[Any, ...]) -> None:
    name, args, kwargs, shape = case
    torch.manual_seed(0)
    theirs = randomize(getattr(torch.nn, name)(*args, **kwargs)).eval()
    ours = getattr(nn, name)(*args, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert repr(ours) == repr(theirs)
    copy_into(ours, theirs)
    x = _input(shape)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x))
    assert_close(ours(x), expected)


TRAIN_CASES = [case for case in CASES if case[0].startswith(("BatchNorm", "InstanceNorm"))]


@pytest.mark.parametrize("case", TRAIN_CASES, ids=[_ids(case) for case in TRAIN_CASES])
def test_norm_layer_matches_torch_in_train_mode(case: tuple[Any, ...]) -> None:
    name, args, kwargs, shape = case
    theirs = randomize(getattr(torch.nn, name)(*args, **kwargs)).train()
    ours = copy_into(getattr(nn, name)(*args, **kwargs), theirs)
    for seed in range(2):
        x = _input(shape) + seed
        with torch.no_grad():
            expected = theirs(torch.from_numpy(x))
        assert_close(ours(x), expected)
    if not name.startswith("Instance"):  # NOTE: nn's InstanceNorm leaves running stats alone
        for key, value in numpy_state(theirs).items():
            np.testing.assert_allclose(ours.state_dict()[key], value, rtol=1e-5, atol=1e-6)


def test_dropout_in_training_zeroes_and_rescales_as_torch_does() -> None:
    nn.init.manual_seed(0)
    x = np.ones((200, 50), np.float32)
    out = nn.Dropout(0.25)(x)
    np.testing.assert_allclose(np.unique(out), [0.0, 1 / 0.75], rtol=1e-6)
    assert abs((out != 0).mean() - 0.75) < 0.02
    assert nn.Dropout(0.0)(x) is x


def test_conv_transpose2d_output_size_matches_torch() -> None:
    theirs = randomize(torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)).eval()
    ours = copy_into(nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), theirs)
    x = _input((1, 3, 4, 4))
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x), output_size=[8, 8])
    assert_close(ours(x, output_size=[8, 8]), expected)
    with pytest.raises(ValueError, match="valid sizes for axis 0 range from 7 to 8"):
        ours(x, output_size=[9, 8])


def test_embedding_matches_torch_including_padding_idx_and_from_pretrained() -> None:
    torch.manual_seed(0)
    theirs = torch.nn.Embedding(10, 4, padding_idx=-1)
    ours = nn.Embedding(10, 4, padding_idx=-1)
    assert ours.padding_idx == theirs.padding_idx == 9
    assert not ours.weight[9].any()
    assert repr(ours) == repr(theirs)
    copy_into(ours, theirs)
    ids = np.array([[1, 9, 3], [0, 0, 2]])
    assert_close(ours(ids), theirs(torch.from_numpy(ids)))
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert_close(nn.Embedding.from_pretrained(table)(np.array([2])),
                 torch.nn.Embedding.from_pretrained(torch.from_numpy(table))(
                     torch.tensor([2])))
    with pytest.raises(IndexError, match=r"indices span \[0, 10\], num_embeddings is 10"):
        ours(np.array([0, 10]))
    with pytest.raises(TypeError, match="must be an integer array, got dtype float32"):
        ours(np.zeros(2, np.float32))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_multihead_attention_matches_torch(batch_first: bool, bias: bool) -> None:
    torch.manual_seed(0)
    theirs = randomize(torch.nn.MultiheadAttention(8, 2, bias=bias,
                                                   batch_first=batch_first)).eval()
    ours = copy_into(nn.MultiheadAttention(8, 2, bias=bias, batch_first=batch_first), theirs)
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(0)
    shape_q, shape_kv = ((2, 3, 8), (2, 5, 8)) if batch_first else ((3, 2, 8), (5, 2, 8))
    q = rng.standard_normal(shape_q).astype(np.float32)
    kv = rng.standard_normal(shape_kv).astype(np.float32)
    padding = np.array([[False] * 4 + [True], [False] * 5])
    causal_bool = np.triu(np.ones((3, 5), bool), k=1)
    float_mask = rng.standard_normal((2 * 2, 3, 5)).astype(np.float32)
    calls: list[dict[str, Any]] = [
        {},
        {"key_padding_mask": padding},
        {"attn_mask": causal_bool, "key_padding_mask": padding, "average_attn_weights": False},
        {"attn_mask": float_mask},
        {"attn_mask": causal_bool, "is_causal": True, "need_weights": False},
    ]
    for kwargs in calls:
        with torch.no_grad():
            expected = theirs(*map(to_torch, (q, kv, kv)),
                              **{k: to_torch(v) for k, v in kwargs.items()})
        assert_close(ours(q, kv, kv, **kwargs), expected)


def test_multihead_attention_with_kdim_vdim_and_unbatched_input() -> None:
    torch.manual_seed(0)
    theirs = randomize(torch.nn.MultiheadAttention(8, 4, kdim=5, vdim=3)).eval()
    ours = copy_into(nn.MultiheadAttention(8, 4, kdim=5, vdim=3), theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(shape).astype(np.float32)
               for shape in ((3, 8), (4, 5), (4, 3)))
    with torch.no_grad():
        expected = theirs(*map(to_torch, (q, k, v)))
    assert_close(ours(q, k, v), expected)
    with pytest.raises(ValueError, match="Need attn_mask if specifying the is_causal hint"):
        ours(q, k, v, is_causal=True)
    with pytest.raises(ValueError, match=r"2D attn_mask is \(2, 2\), but should be \(3, 4\)"):
        ours(q, k, v, attn_mask=np.zeros((2, 2), bool))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer_matches_torch(norm_first: bool, activation: str) -> None:
    torch.manual_seed(0)
    kwargs = {"dim_feedforward": 32, "activation": activation, "batch_first": True,
              "norm_first": norm_first}
    theirs = randomize(torch.nn.TransformerEncoderLayer(16, 4, **kwargs)).eval()
    ours = nn.TransformerEncoderLayer(16, 4, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    copy_into(ours, theirs)
    x = np.random.default_rng(0).standard_normal((2, 6, 16)).astype(np.float32)
    padding = np.array([[False] * 6, [False] * 4 + [True] * 2])
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            expected = theirs(torch.from_numpy(x), src_key_padding_mask=to_torch(padding))
            causal = torch.nn.Transformer.generate_square_subsequent_mask(6)
            expected_causal = theirs(torch.from_numpy(x), src_mask=causal, is_causal=True)
    finally:
        torch.backends.mha.set_fastpath_enabled(True)
    assert_close(ours(x, src_key_padding_mask=padding), expected)
    assert_close(ours(x, src_mask=causal.numpy(), is_causal=True), expected_causal)


def test_transformer_encoder_stack_matches_torch() -> None:
    torch.manual_seed(0)
    layer_args = (16, 4)
    layer_kwargs = {"dim_feedforward": 32}
    theirs = randomize(torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(*layer_args, **layer_kwargs), 2,
        norm=torch.nn.LayerNorm(16), enable_nested_tensor=False)).eval()
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(*layer_args, **layer_kwargs), 2,
                                 norm=nn.LayerNorm(16))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    copy_into(ours, theirs)
    x = np.random.default_rng(0).standard_normal((5, 2, 16)).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x))
    assert_close(ours(x), expected)


def test_layer_constructor_errors_match_torch_texts() -> None:
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(3, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        nn.GroupNorm(4, 6)
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_layer_input_errors_name_the_shape() -> None:
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(np.zeros((3, 4, 4), np.float32))
    with pytest.raises(ValueError, match=r"expected input\[1, 4, 5, 5\] to have 3 channels, "
                                         r"but got 4 channels instead"):
        nn.Conv2d(3, 2, 3)(np.zeros((1, 4, 5, 5), np.float32))
    with pytest.raises(ValueError, match=r"expected input with shape \[\*, 4\], but got input "
                                         r"of size \[2, 5\]"):
        nn.LayerNorm(4)(np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match="pad should be at most half of effective kernel size"):
        nn.MaxPool2d(2, padding=2)(np.zeros((1, 1, 4, 4), np.float32))
