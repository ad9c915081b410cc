"""ONNX rearrangement, index and running ops: DepthToSpace / SpaceToDepth (sub-pixel
rearrangements), ArgMax / ArgMin, CumSum, CumProd, Trilu, and the GroupNormalization (opsets 18 and
21) and RMSNormalization (opset 23) forms, each through ``nn.functional`` composites.

Values known at import time (shape arithmetic, integer tensors) are computed with numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from ..trace_dims import SymbolicDim
from .node import OnnxNode


def depth_to_space(n: OnnxNode) -> Any:
    """DCR (the default) takes channel blocks depth first: a channel shuffle makes it CRD,
    which is torch's pixel shuffle."""
    x, block = n.input(0), int(n.attr("blocksize"))
    mode = n.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise n.error(f"unknown mode {mode!r}; expected 'DCR' or 'CRD'")
    if mode == "DCR":
        x = F.channel_shuffle(x, block * block)
    return F.pixel_shuffle(x, block)


def space_to_depth(n: OnnxNode) -> Any:
    """SpaceToDepth: torch's pixel unshuffle is CRD (``mode``, opset 28); DCR, the default,
    puts the block offsets first, a channel shuffle away."""
    x, block = n.input(0), int(n.attr("blocksize"))
    mode = n.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise n.error(f"unknown mode {mode!r}; expected 'DCR' or 'CRD'")
    out = F.pixel_unshuffle(x, block)
    return out if mode == "CRD" else F.channel_shuffle(out, x.shape[1])


def _arg(fn: Callable[..., Any]) -> Callable[[OnnxNode], Any]:
    def arg(n: OnnxNode) -> Any:
        x, dim = n.input(0), n.axis(n.attr("axis", 0))
        keep, last = bool(n.attr("keepdims", 1)), bool(n.attr("select_last_index", 0))
        if isinstance(x, np.ndarray):
            picked = np.flip(x, dim) if last else x
            index = (np.argmax if fn is F.argmax else np.argmin)(picked, dim, keepdims=keep)
            return (x.shape[dim] - 1 - index) if last else index
        return fn(x, dim, keep, last)
    return arg


def cum_sum(n: OnnxNode) -> Any:
    x = n.input(0)
    dim = n.axis(int(n.known(1, "axis").reshape(-1)[0]))
    exclusive, reverse = bool(n.attr("exclusive", 0)), bool(n.attr("reverse", 0))
    if not isinstance(x, np.ndarray):
        if isinstance(x.shape[dim], str):
            return _cum_sum_in_a_loop(x, dim, exclusive, reverse)
        return F.cumsum(x, dim, exclusive, reverse)
    values = np.flip(x, dim) if reverse else x
    sums = np.cumsum(values, dim, dtype=x.dtype)
    if exclusive:
        sums = np.concatenate([np.zeros_like(np.take(sums, [0], dim)),
                               np.take(sums, range(x.shape[dim] - 1), dim)], dim)
    return np.flip(sums, dim) if reverse else sums


def _cum_sum_in_a_loop(x: Any, dim: int, exclusive: bool, reverse: bool) -> Any:
    """CumSum along a symbolic axis (RoBERTa's and padded GPT-2's positions counted along
    the attention mask): one ``nn.functional.loop`` over the axis moved to the front, the
    running sum carried, so integers sum exactly."""
    from ..ops.loop import Body

    order = [dim, *(d for d in range(len(x.shape)) if d != dim)]
    rows = F.permute(x, order) if dim else x
    row = tuple(rows.shape[1:])
    spec = (row, str(x.dtype))

    def step(i: Any, states: list[Any], elements: list[Any], outer: list[Any]
             ) -> tuple[list[Any], list[Any]]:
        total = F.add(states[0], elements[0])
        return [total], [states[0] if exclusive else total]

    dims = {str(d): d.bounds for d in row if isinstance(d, SymbolicDim)}
    body = Body.trace(step, [spec], [spec], dims=dims)
    sums = F.loop(None, [F.full(list(row), 0, x.dtype)], [rows], [], body,
                  reverse_inputs=(reverse,), reverse_outputs=(reverse,))[1]
    return F.permute(sums, [order.index(d) for d in range(len(order))]) if dim else sums


def cum_prod(n: OnnxNode) -> Any:
    """CumProd (opset 26, taken at any opset the importer follows): ``F.cumprod``."""
    x = n.input(0)
    dim = n.axis(int(n.known(1, "axis").reshape(-1)[0]))
    return F.cumprod(x, dim, bool(n.attr("exclusive", 0)), bool(n.attr("reverse", 0)))


def trilu(n: OnnxNode) -> Any:
    x = n.input(0)
    k = int(n.known(1, "k").reshape(-1)[0]) if n.has(1) else 0
    upper = bool(n.attr("upper", 1))
    if isinstance(x, np.ndarray):
        return np.triu(x, k) if upper else np.tril(x, k)
    return F.triu(x, k) if upper else F.tril(x, k)


def group_normalization(n: OnnxNode) -> Any:
    """Opset 18 gives ``scale`` and ``bias`` per group, 21 per channel: a per-group one is
    repeated over the group's channels."""
    x, groups = n.input(0), int(n.attr("num_groups"))
    channels = x.shape[1]
    affine: list[np.ndarray] = []
    for index, what in ((1, "scale"), (2, "bias")):
        value = n.known(index, what).reshape(-1)
        if value.size == groups and channels != groups:
            value = np.repeat(value, channels // groups)
        if value.size != channels:
            raise n.error(f"{what} has {value.size} values; expected {groups} (one per group) "
                          f"or {channels} (one per channel)")
        affine.append(value.astype(np.float32))
    scale, bias = affine
    return F.group_norm(x, groups, scale, bias, n.attr("epsilon", 1e-5))


def rms_normalization(n: OnnxNode) -> Any:
    x = n.input(0)
    axis = n.axis(n.attr("axis", -1))
    return F.rms_norm(x, tuple(x.shape[axis:]), n.input(1), n.attr("epsilon", 1e-5))


OPS: dict[str, Callable[[OnnxNode], Any]] = {
    "DepthToSpace": depth_to_space, "SpaceToDepth": space_to_depth,
    "ArgMax": _arg(F.argmax), "ArgMin": _arg(F.argmin), "CumProd": cum_prod, "CumSum": cum_sum,
    "Trilu": trilu,
    "GroupNormalization": group_normalization, "RMSNormalization": rms_normalization,
}
