"""Small PyTorch definitions of architectures people export to ONNX today, with random
seeded weights and a few layers each: a GPT-2-style causal decoder (with and without past
keys and values, and over a left-padded batch), a LLaMA-style block, a Whisper-style audio
encoder, a T5-style attention with relative position buckets, a ViT with a class token, and
the convolutional ones of ``torch_convnets`` (ConvNeXt, EfficientNet, YOLOv8, U-Net).

Each follows the reference implementation's spelling of its ops (slicing and ``cat`` for the
rotary embedding, ``repeat_interleave`` for grouped-query attention, ``permute`` around a
channels-last LayerNorm, ``scaled_dot_product_attention`` where the real models call it), so
the ONNX exporters meet the patterns they meet on the real models. ``ARCHS`` names them with
their example inputs, shared by ``tests/onnx/test_torch_archs.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch_convnets import ConvNeXt, EfficientNet, UNet, YOLOv8

Inputs = Callable[[np.random.Generator], dict[str, np.ndarray]]


def _randomize_norms(model: nn.Module) -> nn.Module:
    """Non-trivial running statistics and affine parameters, so folding them is tested."""
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
        if isinstance(module, (nn.BatchNorm2d, nn.GroupNorm, nn.LayerNorm)):
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)
    return model.eval()


def _sinusoids(length: int, channels: int) -> torch.Tensor:
    """Whisper's fixed positional table: sin in the first half of the channels, cos in the
    second, at log-spaced timescales up to 10,000."""
    increment = math.log(10000) / (channels // 2 - 1)
    inv_timescales = torch.exp(-increment * torch.arange(channels // 2))
    scaled = torch.arange(length)[:, None] * inv_timescales[None, :]  # (T, C/2)
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1)


class CausalSelfAttention(nn.Module):
    """GPT-2's attention: one fused qkv projection, heads split by view, past keys and values
    concatenated in front, a causal mask offset by the past length."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x, past: tuple[torch.Tensor, torch.Tensor] | None = None,
                bias: torch.Tensor | None = None):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in (q, k, v))  # (B, nh, T, hs)
        if bias is not None:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        elif past is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
            p = k.shape[2] - t
            mask = torch.ones(t, p + t, dtype=torch.bool).tril(diagonal=p)  # (T, P+T)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c)), (k, v)


class GPT2Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * d, d))

    def forward(self, x, past=None, bias=None):
        y, present = self.attn(self.ln_1(x), past, bias)
        x = x + y
        return x + self.mlp(self.ln_2(x)), present


class GPT2(nn.Module):
    """Token and learned position embeddings, pre-LN blocks, the head tied to the tokens."""

    def __init__(self, vocab: int = 64, d: int = 32, heads: int = 4, layers: int = 2,
                 max_len: int = 32):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.h = nn.ModuleList(GPT2Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def decode(self, input_ids, past_kv: list[torch.Tensor]):
        """Logits and each layer's present keys and values after ``past_kv`` (keys and values
        of layer 0, then layer 1, ...; empty: no past)."""
        t = input_ids.shape[1]
        p = past_kv[0].shape[2] if past_kv else 0
        x = self.wte(input_ids) + self.wpe(torch.arange(p, p + t))
        presents: list[torch.Tensor] = []
        for i, block in enumerate(self.h):
            x, present = block(x, (past_kv[2 * i], past_kv[2 * i + 1]) if past_kv else None)
            presents += present
        return self.ln_f(x) @ self.wte.weight.T, presents  # (B, T, vocab)

    def forward(self, input_ids):
        return self.decode(input_ids, [])[0]


class GPT2WithMask(GPT2):
    """GPT-2 as transformers runs a padded batch: positions counted along the attention mask
    (``cumsum``), and the padding mask and the causal one merged into an additive bias."""

    def forward(self, input_ids, attention_mask):
        t = input_ids.shape[1]
        positions = (attention_mask.cumsum(-1) - 1).masked_fill(attention_mask == 0, 1)
        x = self.wte(input_ids) + self.wpe(positions)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        keep = causal[None, None] & attention_mask[:, None, None, :].bool()  # (B, 1, T, T)
        bias = torch.where(keep, 0.0, torch.finfo(torch.float32).min)
        for block in self.h:
            x = block(x, None, bias)[0]
        return self.ln_f(x) @ self.wte.weight.T  # (B, T, vocab)


class GPT2WithPast(GPT2):
    """GPT-2 as exported for generation: the past keys and values of two layers in, the
    presents out."""

    def forward(self, input_ids, past_key_0, past_value_0, past_key_1, past_value_1):
        logits, presents = self.decode(input_ids,
                                       [past_key_0, past_value_0, past_key_1, past_value_1])
        return (logits, *presents)


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def _rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    """RMSNorm, rotary embeddings (slice and cat), grouped-query attention (keys and values
    repeated by ``repeat_interleave``), SwiGLU."""

    def __init__(self, d: int = 32, heads: int = 4, kv_heads: int = 2, hidden: int = 64):
        super().__init__()
        self.heads, self.kv_heads, self.hs = heads, kv_heads, d // heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hs, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hs, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(d), RMSNorm(d)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, self.hs, 2) / self.hs))

    def forward(self, x):
        b, t, _ = x.shape
        freqs = torch.arange(t, dtype=torch.float32)[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)  # (T, hs)
        cos, sin = emb.cos(), emb.sin()
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.heads, self.hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.k_proj(h).view(b, t, self.kv_heads, self.hs).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.kv_heads, self.hs).transpose(1, 2)
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(y.transpose(1, 2).reshape(b, t, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class EncoderBlock(nn.Module):
    """Pre-LN self-attention without a mask (Whisper's encoder, ViT)."""

    def __init__(self, d: int, heads: int, act: Callable = F.gelu):
        super().__init__()
        self.heads, self.act = heads, act
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(self.act(self.fc1(self.norm2(x))))


class WhisperEncoder(nn.Module):
    """Two Conv1d (the second of stride 2) with GELU over a log-mel spectrogram, fixed
    sinusoidal positions, attention blocks, a final LayerNorm."""

    def __init__(self, mels: int = 16, d: int = 32, heads: int = 4, frames: int = 32):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.register_buffer("positional_embedding", _sinusoids(frames // 2, d))
        self.blocks = nn.ModuleList(EncoderBlock(d, heads) for _ in range(2))
        self.ln_post = nn.LayerNorm(d)

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)  # (B, T/2, d)
        x = x + self.positional_embedding
        for block in self.blocks:
            x = block(x)
        return self.ln_post(x)


def relative_position_bucket(relative_position, bidirectional: bool, num_buckets: int,
                             max_distance: int):
    """T5's buckets: exact below ``max_exact``, log-spaced up to ``max_distance``."""
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (torch.log(relative_position.float() / max_exact)
                         / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, relative_position, large)


class T5Attention(nn.Module):
    """T5's self-attention layer: RMS LayerNorm without a mean, unscaled scores plus a learned
    bias per relative position bucket, a ReLU feed-forward."""

    def __init__(self, d: int = 32, heads: int = 4, bidirectional: bool = True,
                 num_buckets: int = 32, max_distance: int = 128):
        super().__init__()
        self.heads, self.bidirectional = heads, bidirectional
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.q, self.k = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.v, self.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.relative_attention_bias = nn.Embedding(num_buckets, heads)
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.wi, self.wo = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        context = torch.arange(t, dtype=torch.long)[:, None]
        memory = torch.arange(t, dtype=torch.long)[None, :]
        bucket = relative_position_bucket(memory - context, self.bidirectional,
                                          self.num_buckets, self.max_distance)  # (T, T)
        bias = self.relative_attention_bias(bucket).permute(2, 0, 1).unsqueeze(0)  # (1, nh, T, T)
        h = self.ln1(x)
        q, k, v = (p(h).view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for p in (self.q, self.k, self.v))  # (B, nh, T, hs)
        y = torch.softmax(q @ k.transpose(3, 2) + bias, dim=-1) @ v
        x = x + self.o(y.transpose(1, 2).reshape(b, t, c))
        return x + self.wo(F.relu(self.wi(self.ln2(x))))


class ViT(nn.Module):
    """Patch embedding by a 4x4/4 conv, a learned class token concatenated in front, learned
    positions, pre-LN blocks, the head on the class token."""

    def __init__(self, d: int = 32, heads: int = 4, classes: int = 10, image: int = 16):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, d, 4, stride=4)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.5)
        self.pos_embed = nn.Parameter(torch.randn(1, (image // 4) ** 2 + 1, d) * 0.5)
        self.blocks = nn.ModuleList(EncoderBlock(d, heads) for _ in range(2))
        self.norm, self.head = nn.LayerNorm(d, eps=1e-6), nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)  # (B, N, d)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def _floats(**shapes: tuple[int, ...]) -> Inputs:
    return lambda rng: {name: rng.standard_normal(s).astype(np.float32)
                        for name, s in shapes.items()}


def _gpt2_past_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    inputs = {"input_ids": rng.integers(0, 64, (2, 3))}
    for i in range(2):
        for kind in ("key", "value"):
            inputs[f"past_{kind}_{i}"] = rng.standard_normal((2, 4, 5, 8)).astype(np.float32)
    return inputs


def _gpt2_masked_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    mask = np.ones((2, 7), np.int64)
    mask[0, :3] = 0  # left padding, as for generation
    return {"input_ids": rng.integers(0, 64, (2, 7)), "attention_mask": mask}


def _unet_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"x": rng.standard_normal((2, 4, 16, 16)).astype(np.float32),
            "t": rng.uniform(0, 1000, 2).astype(np.float32)}


@dataclass(frozen=True)
class Arch:
    """A model to build (seeded) and how to make its inputs; ``outputs`` names its results."""

    build: Callable[[], nn.Module]
    inputs: Inputs
    outputs: tuple[str, ...] = ("y",)
    sequence: dict[str, int] = field(default_factory=dict)
    """The token (or time) axis of each input that has one: the axis a user exports as a
    symbolic sequence."""

    def model(self) -> nn.Module:
        torch.manual_seed(0)
        return _randomize_norms(self.build())


_PRESENTS = tuple(f"present_{kind}_{i}" for i in range(2) for kind in ("key", "value"))

ARCHS: dict[str, Arch] = {
    "gpt2": Arch(GPT2, lambda rng: {"input_ids": rng.integers(0, 64, (2, 7))}, ("logits",),
                 sequence={"input_ids": 1}),
    "gpt2_masked": Arch(GPT2WithMask, _gpt2_masked_inputs, ("logits",),
                        sequence={"input_ids": 1, "attention_mask": 1}),
    "gpt2_past": Arch(GPT2WithPast, _gpt2_past_inputs, ("logits", *_PRESENTS),
                      sequence={"input_ids": 1}),
    "llama": Arch(LlamaBlock, _floats(x=(2, 7, 32)), sequence={"x": 1}),
    "whisper_encoder": Arch(WhisperEncoder, _floats(mel=(2, 16, 32))),  # fixed frames
    "convnext": Arch(ConvNeXt, _floats(x=(2, 3, 32, 32))),
    "efficientnet": Arch(EfficientNet, _floats(x=(2, 3, 32, 32))),
    "yolov8": Arch(YOLOv8, _floats(x=(1, 3, 32, 32))),
    "unet": Arch(UNet, _unet_inputs),
    "t5_encoder": Arch(T5Attention, _floats(x=(2, 9, 32)), sequence={"x": 1}),
    "t5_decoder": Arch(lambda: T5Attention(bidirectional=False), _floats(x=(2, 9, 32)),
                       sequence={"x": 1}),
    "vit": Arch(ViT, _floats(x=(2, 3, 16, 16))),
}
