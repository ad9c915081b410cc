"""Layers with PyTorch's constructor signatures, parameter names and shapes."""

from .activation import (
                         GELU,
                         Hardswish,
                         LeakyReLU,
                         LogSoftmax,
                         ReLU,
                         ReLU6,
                         Sigmoid,
                         SiLU,
                         Softmax,
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
from .sparse import Embedding
from .transformer import TransformerEncoder, TransformerEncoderLayer

__all__ = [
                         "GELU",
                         "GRU",
                         "LSTM",
                         "RNN",
                         "AdaptiveAvgPool2d",
                         "AvgPool2d",
                         "BatchNorm1d",
                         "BatchNorm2d",
                         "Conv1d",
                         "Conv2d",
                         "ConvTranspose2d",
                         "Dropout",
                         "Embedding",
                         "Flatten",
                         "GroupNorm",
                         "Hardswish",
                         "Identity",
                         "InstanceNorm2d",
                         "LayerNorm",
                         "LeakyReLU",
                         "Linear",
                         "LogSoftmax",
                         "MaxPool2d",
                         "ModuleDict",
                         "ModuleList",
                         "MultiheadAttention",
                         "NonDynamicallyQuantizableLinear",
                         "ReLU",
                         "ReLU6",
                         "Sequential",
                         "SiLU",
                         "Sigmoid",
                         "Softmax",
                         "Tanh",
                         "TransformerEncoder",
                         "TransformerEncoderLayer",
]
