"""Layers with PyTorch's constructor signatures, parameter names and shapes."""

from .activation import (
                         CELU,
                         ELU,
                         GELU,
                         SELU,
                         Hardshrink,
                         Hardswish,
                         LeakyReLU,
                         LogSoftmax,
                         Mish,
                         ReLU,
                         ReLU6,
                         Sigmoid,
                         SiLU,
                         Softmax,
                         Softplus,
                         Softshrink,
                         Softsign,
                         Tanh,
)
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .dropout import Dropout
from .flatten import Flatten
from .linear import Identity, Linear, NonDynamicallyQuantizableLinear
from .norm import BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm2d, LayerNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .recurrent import GRU, LSTM, RNN
from .shuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle
from .sparse import Embedding
from .transformer import TransformerEncoder, TransformerEncoderLayer
from .upsample import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
                         "CELU",
                         "ELU",
                         "GELU",
                         "GRU",
                         "LSTM",
                         "RNN",
                         "SELU",
                         "AdaptiveAvgPool2d",
                         "AvgPool2d",
                         "BatchNorm1d",
                         "BatchNorm2d",
                         "ChannelShuffle",
                         "Conv1d",
                         "Conv2d",
                         "ConvTranspose2d",
                         "Dropout",
                         "Embedding",
                         "Flatten",
                         "GroupNorm",
                         "Hardshrink",
                         "Hardswish",
                         "Identity",
                         "InstanceNorm2d",
                         "LayerNorm",
                         "LeakyReLU",
                         "Linear",
                         "LogSoftmax",
                         "MaxPool2d",
                         "Mish",
                         "ModuleDict",
                         "ModuleList",
                         "MultiheadAttention",
                         "NonDynamicallyQuantizableLinear",
                         "PixelShuffle",
                         "PixelUnshuffle",
                         "ReLU",
                         "ReLU6",
                         "Sequential",
                         "SiLU",
                         "Sigmoid",
                         "Softmax",
                         "Softplus",
                         "Softshrink",
                         "Softsign",
                         "Tanh",
                         "TransformerEncoder",
                         "TransformerEncoderLayer",
                         "Upsample",
                         "UpsamplingBilinear2d",
                         "UpsamplingNearest2d",
]
