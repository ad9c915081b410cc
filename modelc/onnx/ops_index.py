"""ONNX index ops: OneHot, GatherND and ScatterND, written in ``nn.functional`` calls
(comparisons, where, slices, gathers) so they need no kernel of their own, and TopK
(``topk``); computed in numpy when known."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from .fold import is_known
from .node import OnnxNode

OpFn = Callable[[OnnxNode], Any]


def one_hot(n: OnnxNode) -> Any:
    """OneHot: ``values[1]`` where an index equals its position along the new ``axis``
    (a negative index counts from ``depth``), else ``values[0]``."""
    indices = n.input(0)
    depth = int(n.known(1, "depth").reshape(-1)[0])
    off, on = n.known(2, "values").reshape(-1)[:2]
    rank = len(indices.shape) + 1
    axis = n.axis(n.attr("axis", -1), rank)
    shape = [1] * rank
    shape[axis] = depth
    positions = np.arange(depth).reshape(shape)
    if is_known(indices):
        picked = np.expand_dims(indices, axis)
        hit = (picked == positions) | (picked == positions - depth)
        return np.where(hit, on, off)
    dtype = indices.dtype
    picked = F.reshape(indices, (*indices.shape[:axis], 1, *indices.shape[axis:]))
    hits = [F.cast(F.eq(picked, positions.astype(dtype)), np.float32),
            F.cast(F.eq(picked, (positions - depth).astype(dtype)), np.float32)]
    hit = F.ne(F.add(*hits), 0.0)
    return F.where(hit, np.array(on), np.array(off))


def gather_nd(n: OnnxNode) -> Any:
    """GatherND at indices known at import time: one slice per index tuple, joined."""
    data, indices = n.input(0), n.known(1, "indices")
    dims = n.attr("batch_dims", 0)
    if is_known(data):
        return _gather_nd(data, indices, dims)
    if dims:
        raise n.error("batch_dims > 0 on a run-time tensor is not supported")
    depth = indices.shape[-1]
    fixed = data.shape[:depth]
    if not all(isinstance(d, int) for d in fixed):
        raise n.error(f"indexed axes {list(fixed)} must be fixed; fix them with input_shapes")
    flat = indices.reshape(-1, depth) % np.array(fixed, np.int64)
    rest = data.shape[depth:]
    parts = []
    for row in flat:
        part = data
        for axis, i in enumerate(row):
            part = F.slice(part, axis, int(i), int(i) + 1)
        parts.append(F.reshape(part, (1, *rest)))
    joined = parts[0] if len(parts) == 1 else F.concat(parts, 0)
    return F.reshape(joined, (*indices.shape[:-1], *rest))


def _gather_nd(data: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    """numpy GatherND (known operands)."""
    if batch_dims:
        return np.stack([_gather_nd(d, i, batch_dims - 1) for d, i in zip(data, indices)])
    depth = indices.shape[-1]
    flat = indices.reshape(-1, depth)
    picked = np.stack([data[tuple(row)] for row in flat]) if len(flat) else data[:0]
    return picked.reshape(*indices.shape[:-1], *data.shape[depth:])


def scatter_nd(n: OnnxNode) -> Any:
    """ScatterND at indices known at import time (``reduction='none'``): each output element
    is the update that lands on it (the last one, as onnxruntime writes them in order), read
    by one gather of the flattened updates, else the data element, chosen by a known mask."""
    data, indices, updates = n.input(0), n.known(1, "indices"), n.input(2)
    if n.attr("reduction", "none") != "none":
        raise n.error(f"reduction {n.attr('reduction')!r} is not supported; 'none' is")
    if is_known(data, updates):
        out = np.array(data, copy=True)
        for row, update in zip(indices.reshape(-1, indices.shape[-1]),
                               updates.reshape(-1, *data.shape[indices.shape[-1]:])):
            out[tuple(row)] = update
        return out
    if not all(isinstance(d, int) for d in (*data.shape, *updates.shape)):
        raise n.error(f"ScatterND needs fixed shapes, got data {list(data.shape)} and updates "
                      f"{list(updates.shape)}; fix them with input_shapes")
    source = np.full(data.shape, -1, np.int64)  # flat update index landing on each element
    positions = np.arange(int(np.prod(updates.shape)), dtype=np.int64)
    depth = indices.shape[-1]
    for row, taken in zip(indices.reshape(-1, depth),
                          positions.reshape(-1, *data.shape[depth:])):
        source[tuple(row)] = taken
    hit = source >= 0
    if not hit.any():
        return data
    column = F.reshape(updates, (int(np.prod(updates.shape)), 1))
    landed = F.reshape(F.embedding(np.maximum(source, 0), column), data.shape)
    return F.where(hit, landed, data)


def top_k(n: OnnxNode) -> tuple[Any, Any]:
    """TopK: ``k`` is an attribute before opset 10 and input 1 from it; ``sorted=0`` allows
    any order, so sorted output serves it too."""
    x = n.input(0)
    k = int(n.known(1, "k").reshape(-1)[0]) if n.opset >= 10 else int(n.attr("k"))
    dim = n.axis(n.attr("axis", -1))
    largest = bool(n.attr("largest", 1))
    if is_known(x):
        return F.topk(x, k, dim, largest)
    if x.dtype != np.float32:
        raise n.error(f"TopK of a run-time {x.dtype} tensor is not supported; float32 is")
    return F.topk(x, k, dim, largest)


OPS: dict[str, OpFn] = {"OneHot": one_hot, "GatherND": gather_nd, "ScatterND": scatter_nd,
                        "TopK": top_k}
