"""Hugging Face ``transformers`` architectures as users export them to ONNX, built tiny and
randomly initialised (seeded; two layers, hidden 32 to 64, vocabulary 100, no download) from
each model's ``Config`` class: the encoders (BERT, DistilBERT, RoBERTa, ALBERT, ELECTRA), the
decoders (GPT-2, LLaMA, Qwen2), T5's and BART's and Whisper's encoders, the vision models
(ViT, Swin, ConvNeXt, SegFormer, MobileViT, CLIP's towers, YOLOS) and Wav2Vec2's audio encoder.

Each model is wrapped so that it returns a tuple of tensors (the head's output, as optimum
exports it), and ``HF_ARCHS`` names it with its fixed-shape example inputs, shared by
``tests/onnx/test_hf_archs.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import transformers
from torch import nn

Inputs = Callable[[np.random.Generator], dict[str, np.ndarray]]

VOCAB = 100
TEXT = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, max_position_embeddings=64)
"""A BERT-style configuration: the sizes most text encoders name the same way."""


def _randomize(model: nn.Module) -> nn.Module:
    """torch's default initialisation of every linear, convolution and embedding (the
    configs' 0.02 normal makes the activations of deep convolutional stacks vanish and
    attention nearly uniform), with non-trivial norm statistics and affine parameters."""
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Embedding)):
            module.reset_parameters()
        if isinstance(module, (nn.BatchNorm2d, nn.BatchNorm1d)):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
        if isinstance(module, (nn.BatchNorm2d, nn.BatchNorm1d, nn.GroupNorm, nn.LayerNorm)
                      ) and module.weight is not None:
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)
    return model


class Outputs(nn.Module):
    """``model(**inputs)`` reduced to the tensors named ``keys`` of its output, in order."""

    def __init__(self, model: nn.Module, names: tuple[str, ...], keys: tuple[str, ...]):
        super().__init__()
        self.model, self.names, self.keys = model, names, keys

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(**dict(zip(self.names, args, strict=True)))
        return tuple(out[key] for key in self.keys)


@dataclass(frozen=True)
class HFArch:
    """A ``transformers`` model class, its config, its inputs and the outputs to export."""

    model_class: str
    config: Callable[[], Any]
    inputs: Inputs
    outputs: tuple[str, ...] = ("logits",)
    submodule: str = ""
    """An attribute path of the model to export alone (``"encoder"``, ``"get_encoder"``)."""

    def model(self, names: tuple[str, ...]) -> nn.Module:
        """The model, seeded and in eval mode, taking ``names`` positionally."""
        torch.manual_seed(0)
        model = _randomize(getattr(transformers, self.model_class)(self.config()))
        if self.submodule:
            model = getattr(model, self.submodule)
        return Outputs(model.eval(), names, self.outputs).eval()


def _config(name: str, **kwargs: Any) -> Callable[[], Any]:
    return lambda: getattr(transformers, name)(**kwargs)


def _text(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Three sequences of 12 token ids (avoiding the special ids 0 to 2) and an attention
    mask padding the second on the right and all of the third (every key masked: torch's
    attention exports zero those rows)."""
    attention = np.ones((3, 12), np.int64)
    attention[1, 8:] = 0
    attention[2] = 0
    return {"input_ids": rng.integers(3, VOCAB, (3, 12)), "attention_mask": attention}


def _pixels(size: int, batch: int = 1) -> Inputs:
    return lambda rng: {"pixel_values": rng.standard_normal(
        (batch, 3, size, size)).astype(np.float32)}


def _floats(name: str, shape: tuple[int, ...]) -> Inputs:
    return lambda rng: {name: rng.standard_normal(shape).astype(np.float32)}


_VISION = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
_DECODER = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64)

HF_ARCHS: dict[str, HFArch] = {
    "bert": HFArch("BertForSequenceClassification", _config("BertConfig", **TEXT), _text),
    "distilbert": HFArch("DistilBertForSequenceClassification", _config(
        "DistilBertConfig", vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
        max_position_embeddings=64), _text),
    "roberta": HFArch("RobertaForSequenceClassification", _config("RobertaConfig", **TEXT),
                      _text),
    "albert": HFArch("AlbertForSequenceClassification", _config(
        "AlbertConfig", embedding_size=16, **TEXT), _text),
    "electra": HFArch("ElectraForSequenceClassification", _config(
        "ElectraConfig", embedding_size=16, **TEXT), _text),
    "gpt2": HFArch("GPT2LMHeadModel", _config(
        "GPT2Config", vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
        use_cache=False), _text),
    "llama": HFArch("LlamaForCausalLM", _config("LlamaConfig", use_cache=False, **_DECODER),
                    _text),
    "qwen2": HFArch("Qwen2ForCausalLM", _config("Qwen2Config", use_cache=False, **_DECODER),
                    _text),
    "t5_encoder": HFArch("T5EncoderModel", _config(
        "T5Config", vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4),
        _text, ("last_hidden_state",)),
    "bart_encoder": HFArch("BartModel", _config(
        "BartConfig", vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=64), _text, ("last_hidden_state",),
        "encoder"),
    "whisper_encoder": HFArch("WhisperModel", _config(
        "WhisperConfig", vocab_size=VOCAB, num_mel_bins=16, d_model=32, encoder_layers=2,
        decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=16,
        max_target_positions=16, pad_token_id=1, bos_token_id=2, eos_token_id=2,
        decoder_start_token_id=2), _floats("input_features", (1, 16, 32)),
        ("last_hidden_state",), "encoder"),
    "vit": HFArch("ViTForImageClassification", _config(
        "ViTConfig", image_size=32, patch_size=8, num_labels=10, **_VISION), _pixels(32)),
    "swin": HFArch("SwinForImageClassification", _config(
        "SwinConfig", image_size=32, patch_size=2, embed_dim=16, depths=[1, 1],
        num_heads=[2, 4], window_size=4, num_labels=10), _pixels(32)),
    "convnext": HFArch("ConvNextForImageClassification", _config(
        "ConvNextConfig", num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], num_labels=10),
        _pixels(32)),
    "segformer": HFArch("SegformerForSemanticSegmentation", _config(
        "SegformerConfig", num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
        hidden_sizes=[16, 32], patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
        mlp_ratios=[2, 2], decoder_hidden_size=32, num_labels=5), _pixels(32)),
    "mobilevit": HFArch("MobileViTForImageClassification", _config(
        "MobileViTConfig", image_size=32, hidden_sizes=[16, 24, 32], neck_hidden_sizes=[
            8, 8, 16, 16, 24, 32, 48], num_attention_heads=2, num_labels=10), _pixels(32)),
    "clip_text": HFArch("CLIPTextModel", _config(
        "CLIPTextConfig", **TEXT), _text, ("last_hidden_state", "pooler_output")),
    "clip_vision": HFArch("CLIPVisionModel", _config(
        "CLIPVisionConfig", image_size=32, patch_size=8, **_VISION), _pixels(32),
        ("last_hidden_state", "pooler_output")),
    "wav2vec2": HFArch("Wav2Vec2Model", _config(
        "Wav2Vec2Config", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4),
        _floats("input_values", (1, 800)), ("last_hidden_state",)),
    "yolos": HFArch("YolosForObjectDetection", _config(
        "YolosConfig", image_size=[32, 32], patch_size=8, num_detection_tokens=4,
        num_labels=3, **_VISION), _pixels(32), ("logits", "pred_boxes")),
}
