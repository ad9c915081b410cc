"""The op vocabulary: every layer calls these, and tracing records them.

Primitives (``@primitive``) hold the numpy reference semantics and need a kernel lowering
in ``modelc/ops/<name>.py``; ``PRIMITIVES`` names them all. Composite ops are written only
in primitives, so they trace and compile with no further code. Functions take and return
``numpy.ndarray`` in eager mode.
"""

from __future__ import annotations

from .._dispatch import is_primitive
from .activation import (
                         celu,
                         elu,
                         gelu,
                         gelu_tanh,
                         hardshrink,
                         hardsigmoid,
                         hardswish,
                         hardtanh,
                         leaky_relu,
                         mish,
                         relu6,
                         selu,
                         shrink,
                         silu,
                         softplus,
                         softshrink,
                         softsign,
)
from .argmax import argmax, argmin
from .attention import attention_weights, head_attention, scaled_dot_product_attention
from .conv import conv1d, conv2d, conv3d, conv_padding, conv_transpose2d, conv_transpose3d
from .creation import arange, full
from .detection import non_max_suppression
from .dropout import dropout
from .elementwise import (
                         abs,
                         add,
                         cast,
                         check,
                         div,
                         eq,
                         erf,
                         exp,
                         ge,
                         gt,
                         le,
                         log,
                         lt,
                         maximum,
                         minimum,
                         mul,
                         ne,
                         neg,
                         pow,
                         relu,
                         rsqrt,
                         sigmoid,
                         sqrt,
                         sub,
                         tanh,
                         where,
)
from .float_classes import isinf, isnan
from .grid_sample import grid_sample
from .linear import linear, matmul
from .loop import loop
from .normalization import batch_norm, group_norm, instance_norm, layer_norm, rms_norm
from .pixel import channel_shuffle, pixel_shuffle, pixel_unshuffle
from .pooling import adaptive_avg_pool2d, avg_pool2d, avg_pool3d, max_pool2d, max_pool3d
from .qarith import qadd, qconcat
from .quantized import (
                         dequantize_linear,
                         dynamic_quantize_linear,
                         qconv2d,
                         qlinear,
                         qmatmul,
                         quantize_linear,
)
from .recurrent import gru, lstm, lstm_step, rnn
from .reduction import amax, log_softmax, mean, softmax, sum, topk
from .resize import interpolate, resample
from .rounding import ceil, cos, floor, fmod, round, sign, sin, trunc
from .shape import (
                         concat,
                         embedding,
                         flatten,
                         pad,
                         permute,
                         reshape,
                         slice,
                         split,
                         squeeze,
                         transpose,
                         unsqueeze,
)
from .triangular import cumprod, cumsum, tril, triu
from .trigonometry import acos, acosh, asin, asinh, atan, atanh, cosh, sinh, tan
from .winograd import winograd_input, winograd_output

__all__ = ["PRIMITIVES", "abs", "acos", "acosh", "adaptive_avg_pool2d", "add", "amax", "arange",
           "argmax", "argmin", "asin", "asinh", "atan", "atanh", "attention_weights", "avg_pool2d",
           "avg_pool3d", "batch_norm", "cast", "ceil", "celu", "channel_shuffle", "check",
           "concat", "conv1d", "conv2d", "conv3d", "conv_padding", "conv_transpose2d",
           "conv_transpose3d", "cos", "cosh", "cumprod", "cumsum", "dequantize_linear", "div",
           "dropout", "dynamic_quantize_linear",
           "elu", "embedding", "eq", "erf", "exp", "flatten", "floor", "fmod", "full", "ge",
           "gelu", "gelu_tanh", "grid_sample", "group_norm", "gru", "gt", "hardshrink",
           "hardsigmoid", "hardswish", "hardtanh", "head_attention", "instance_norm",
           "interpolate", "isinf", "isnan", "layer_norm", "le", "leaky_relu", "linear", "log",
           "log_softmax", "loop", "lstm", "lstm_step", "lt", "matmul",
           "max_pool2d", "max_pool3d", "maximum", "mean", "minimum", "mish", "mul", "ne", "neg",
           "non_max_suppression",
           "pad", "permute", "pixel_shuffle", "pixel_unshuffle", "pow", "qadd", "qconcat",
           "qconv2d", "qlinear", "qmatmul", "quantize_linear", "relu", "relu6", "resample",
           "reshape", "rms_norm", "rnn", "round", "rsqrt", "scaled_dot_product_attention", "selu",
           "shrink", "sigmoid", "sign", "silu", "sin", "sinh", "slice", "softmax", "softplus",
           "softshrink", "softsign", "split", "sqrt", "squeeze", "sub", "sum", "tan", "tanh",
           "topk", "transpose", "tril", "triu", "trunc", "unsqueeze", "where", "winograd_input",
           "winograd_output"]

PRIMITIVES: tuple[str, ...] = tuple(sorted(
    name for name in __all__ if name != "PRIMITIVES" and is_primitive(globals()[name])))
