"""The pass pipeline: a linear list of named ``Graph -> Graph`` passes, verified after each."""

from __future__ import annotations

from collections.abc import Callable

from ..graph import Graph
from .chain_max_pools import chain_max_pools
from .channels_last_point_convs import channels_last_point_convs
from .compose_permutes import compose_permutes
from .eliminate_dead_code import eliminate_dead_code
from .expand_powers import expand_powers
from .flush_subnormal_weights import flush_subnormal_weights
from .fold_affine import fold_affine
from .fold_batchnorm import fold_batchnorm
from .fold_constants import fold_constants
from .fold_dequantize_scales import fold_dequantize_scales
from .fold_gathered_unary import fold_gathered_unary
from .fold_linear_bias import fold_linear_bias
from .fold_scales import fold_scales
from .frame_strided_convs import frame_strided_convs
from .fuse_attention import fuse_attention
from .fuse_epilogues import fuse_epilogues
from .gather_one_hot import gather_one_hot
from .infer_shapes import infer_shapes
from .linear_point_convs import linear_point_convs
from .materialize_outputs import materialize_outputs
from .merge_duplicates import merge_duplicates
from .phase_conv_transposes import phase_conv_transposes
from .plan_memory import plan_memory
from .recognize_composites import recognize_composites
from .recognize_layer_norm import recognize_layer_norm
from .remove_no_ops import remove_no_ops
from .softmax_last_axis import softmax_last_axis
from .split_permutes import split_permutes
from .unstack_heads import unstack_heads
from .winograd_convs import winograd_convs

Pass = Callable[[Graph], Graph]

PIPELINE: tuple[Pass, ...] = (
    infer_shapes,          # shapes and dtypes from each OpDef's rule
    fold_constants,        # nodes computed only from constants run at compile time
    fold_batchnorm,        # inference batch norm merged into the conv/linear before it
    remove_no_ops,         # same-dtype casts, bool + zeros, concat of a tensor's own slices
    eliminate_dead_code,   # nodes that reach no output
    merge_duplicates,      # a node repeating an earlier one (same op, inputs, attrs): dropped
    fold_dequantize_scales,  # qlinear(unit scales) * (x_scale * w_scale) + b: into qlinear
    fold_linear_bias,      # linear(x, w) + b (ONNX's MatMul, Add) into linear(x, w, b)
    fold_scales,           # matmul(linear(x) ...) * s: s moves into the linear's weights
    recognize_composites,  # gelu, silu, relu6, hardswish expansions back into one node each
    recognize_layer_norm,  # mean, sub, square, mean, add, sqrt, div (* g + b): a layer_norm
    fold_affine,           # constant scale and shift beside a conv/linear: into its weights
    gather_one_hot,        # a linear over a one-hot encoding: a gather of the weight's rows
    fold_gathered_unary,   # f(gathered rows of a constant table): the rows of f(table)
    frame_strided_convs,   # a 1-channel 1-D conv with a long stride: frames and a linear
    linear_point_convs,    # a conv over 1x1 planes (heads, squeeze-excite): a linear
    phase_conv_transposes,  # a strided conv_transpose: one conv2d per phase, interleaved
    chain_max_pools,       # SPP's 5/9/13 "same" max pools of one input: a chain of 5x5 pools
    flush_subnormal_weights,  # subnormal gemm weights (a 100x slower multiply): zero
    softmax_last_axis,     # softmax along an inner axis: permuted to the last and back
    expand_powers,         # pow by a constant, rsqrt: into mul, sqrt, div, exp and log
    unstack_heads,         # q, k, v cut from one (3, B, H, T, D) permute: a head permute each
    compose_permutes,      # permute chains into one permute; identities removed
    split_permutes,        # a permute of over 4 unmergeable axes: block moves of <= 4 each
    fuse_epilogues,        # relu & co. into the producing gemm
    channels_last_point_convs,  # 1x1 convs on small planes: linears over channels-last rows
    fuse_attention,        # head permutes, scores (+ mask), softmax, @ v: one head_attention
    winograd_convs,        # dense 3x3 stride-1 convs as Winograd F(2x2) / F(4x4, 3x3)
    materialize_outputs,   # a constant graph output copied into the arena
    plan_memory,           # one activation arena by liveness, symbolic in the dims (last)
)


def optimize(graph: Graph, pipeline: tuple[Pass, ...] = PIPELINE) -> Graph:
    """Run ``pipeline`` over ``graph``, calling ``graph.verify()`` after every pass."""
    for run in pipeline:
        graph = run(graph)
        graph.verify()
    return graph


__all__ = ["PIPELINE", "chain_max_pools", "channels_last_point_convs", "compose_permutes",
           "eliminate_dead_code", "expand_powers", "flush_subnormal_weights", "fold_affine",
           "fold_batchnorm", "fold_constants", "fold_dequantize_scales", "fold_gathered_unary",
           "fold_linear_bias", "fold_scales", "frame_strided_convs", "fuse_attention",
           "fuse_epilogues", "gather_one_hot", "infer_shapes", "linear_point_convs",
           "materialize_outputs", "merge_duplicates", "optimize", "phase_conv_transposes",
           "plan_memory", "recognize_composites", "recognize_layer_norm", "remove_no_ops",
           "softmax_last_axis", "split_permutes", "unstack_heads", "winograd_convs"]
