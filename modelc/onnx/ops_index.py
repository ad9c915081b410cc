"""ONNX index ops: OneHot, GatherND, ScatterND and ScatterElements (and its opset-9 name
Scatter), Compress (at a known condition), written in ``nn.functional`` calls (comparisons,
where, slices, gathers) so they need no kernel of their own, and TopK (``topk``); computed
in numpy when known. GatherND and ScatterND at indices computed at run time view the data as
a table of rows (the indexed axes) and turn each index tuple into a row number with integer
arithmetic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F
from wasm_kernels import abi

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
    if axis == rank - 1 and np.asarray(on).dtype == np.float32:
        return F.embedding(_one_hot_rows(indices, depth), _one_hot_table(depth, on, off))
    dtype = indices.dtype
    picked = F.reshape(indices, (*indices.shape[:axis], 1, *indices.shape[axis:]))
    hits = [F.cast(F.eq(picked, positions.astype(dtype)), np.float32),
            F.cast(F.eq(picked, (positions - depth).astype(dtype)), np.float32)]
    hit = F.ne(F.add(*hits), 0.0)
    return F.where(hit, np.array(on), np.array(off))


def _one_hot_rows(indices: Any, depth: int) -> Any:
    """Each index as a row of ``_one_hot_table``: a negative one counts from ``depth``, and
    one outside ``[-depth, depth)`` picks the last row, all ``off``."""
    wide = F.cast(indices, np.int64)
    row = F.where(F.lt(wide, 0), F.add(wide, depth), wide)
    row = F.where(F.lt(row, depth), row, depth)
    return F.where(F.ge(row, 0), row, depth)


def _one_hot_table(depth: int, on: Any, off: Any) -> np.ndarray:
    """``depth`` one-hot rows of ``on`` among ``off``, and one row all ``off``."""
    table = np.full((depth + 1, depth), off, np.float32)
    table[np.arange(depth), np.arange(depth)] = on
    return table


def gather_nd(n: OnnxNode) -> Any:
    """GatherND: at indices known at import time, one slice per index tuple, joined; at
    run-time indices, one gather of rows (``embedding``) of the data viewed as a table."""
    data, indices = n.input(0), n.input(1)
    dims = n.attr("batch_dims", 0)
    if is_known(data, indices):
        return _gather_nd(data, indices, dims)
    if not is_known(indices):
        return _gather_rows(n, data, indices, dims)
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


def _table(n: OnnxNode, data: Any, lead: int) -> tuple[Any, int, int]:
    """``data`` viewed as a float32 table of (rows, row size): its first ``lead`` axes make
    the rows. Run-time indices gather and scatter whole rows of it.

    Raises:
        CompileError: the data is not float32 or its shape is not fixed.
    """
    if data.dtype != np.float32:
        raise n.error(f"{n.op_type} at run-time indices moves float32 data, got {data.dtype}")
    if not all(isinstance(d, int) for d in data.shape):
        raise n.error(f"{n.op_type} at run-time indices needs fixed data dims, got "
                      f"{list(data.shape)}; fix them with input_shapes")
    rows, size = (int(np.prod(part, dtype=np.int64)) for part in (data.shape[:lead],
                                                                    data.shape[lead:]))
    return F.reshape(data, (rows, size)), rows, size


def _flat_rows(n: OnnxNode, indices: Any, shape: tuple[Any, ...], batch: int) -> Any:
    """Run-time index tuples (the last axis of ``indices``, after ``batch`` leading batch
    axes) as int64 row numbers into data of ``shape`` viewed as a table by ``_table``;
    negative indices count from the end of their axis."""
    depth = indices.shape[-1]
    if not isinstance(depth, int) or batch + depth > len(shape):
        raise n.error(f"indices of shape {list(indices.shape)} (batch_dims {batch}) do not "
                      f"fit data of rank {len(shape)}")
    column_shape = tuple(indices.shape[:-1])
    whole = indices if indices.dtype == np.int64 else F.cast(indices, np.int64)
    flat: Any = None
    stride = 1
    for j in reversed(range(depth)):
        size = int(shape[batch + j])
        column = F.reshape(F.slice(whole, len(whole.shape) - 1, j, j + 1), column_shape)
        column = F.where(F.lt(column, 0), F.add(column, size), column)
        term = column if stride == 1 else F.mul(column, stride)
        flat = term if flat is None else F.add(flat, term)
        stride *= size
    if batch:  # NOTE: each batch entry indexes its own block of rows
        blocks = np.arange(int(np.prod(shape[:batch], dtype=np.int64)), dtype=np.int64)
        offsets = (blocks * stride).reshape(*shape[:batch], *[1] * (len(column_shape) - batch))
        flat = F.add(flat, offsets)
    return flat


def _gather_rows(n: OnnxNode, data: Any, indices: Any, batch: int) -> Any:
    """GatherND at run-time indices: the data's rows picked by ``_flat_rows``."""
    depth = indices.shape[-1]
    table, _, _ = _table(n, data, batch + depth)
    picked = F.embedding(_flat_rows(n, indices, tuple(data.shape), batch), table)
    return F.reshape(picked, (*indices.shape[:-1], *data.shape[batch + depth:]))


def scatter_nd(n: OnnxNode) -> Any:
    """ScatterND: at indices known at import time (``reduction='none'``), each output element
    is the update that lands on it (the last one, as onnxruntime writes them in order), read
    by one gather of the flattened updates, else the data element, chosen by a known mask;
    at run-time indices (or with a reduction), ``_scatter_rows``."""
    data, indices, updates = n.input(0), n.input(1), n.input(2)
    reduction = n.attr("reduction", "none")
    if reduction not in ("none", "add", *_COMBINE):
        raise n.error(f"reduction {reduction!r} is not supported; expected one of "
                      f"{['none', 'add', *_COMBINE]}")
    if is_known(data, indices, updates) and reduction == "none":
        out = np.array(data, copy=True)
        for row, update in zip(indices.reshape(-1, indices.shape[-1]),
                               updates.reshape(-1, *data.shape[indices.shape[-1]:])):
            out[tuple(row)] = update
        return out
    if not is_known(indices) or reduction != "none":
        return _scatter_rows(n, data, indices, updates, reduction)
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


def scatter_elements(n: OnnxNode) -> Any:
    """ScatterElements at indices known at import time: ScatterND at the full coordinates of
    each update (its position, with the index along ``axis``).

    Raises:
        CompileError: the indices are computed at run time.
    """
    data, updates = n.input(0), n.input(2)
    indices = n.known(1, "indices")
    axis = n.axis(n.attr("axis", 0))
    size = data.shape[axis]
    if not isinstance(size, int):
        raise n.error(f"ScatterElements needs a fixed size along axis {axis}, got {size!r}")
    along = np.where(indices < 0, indices + size, indices).astype(np.int64)
    grid = np.indices(indices.shape, np.int64)
    full = np.stack([along if k == axis else grid[k] for k in range(len(grid))],
                    axis=-1)  # (*indices.shape, rank)
    return scatter_nd(OnnxNode(n.name, n.op_type, [data, full, updates], n.attrs, n.opset))


def _scatter_rows(n: OnnxNode, data: Any, indices: Any, updates: Any, reduction: str) -> Any:
    """ScatterND by rows of the data's table (``_table``): a (rows, updates) mask of which
    update lands on which row; ``add`` adds the mask's product with the updates, ``none``
    takes the last update landing on a row (its number, the mask's largest hit, in
    float32: exact below 2**24 updates), ``mul``, ``max`` and ``min`` combine the row with
    the updates landing on it (``_combine``)."""
    depth = indices.shape[-1]
    rows, count, size = _table(n, data, depth)
    landing = F.reshape(_flat_rows(n, indices, tuple(data.shape), 0), (1, -1))  # (1, U)
    mask = F.eq(landing, np.arange(count, dtype=np.int64).reshape(count, 1))  # (rows, U)
    table = F.reshape(updates if updates.dtype == np.float32 else F.cast(updates, np.float32),
                      (-1, size))  # (U, size)
    if reduction == "add":
        return F.reshape(F.add(rows, F.matmul(F.cast(mask, np.float32), table)), data.shape)
    if reduction in _COMBINE:
        return F.reshape(_combine(n, rows, mask, table, reduction), data.shape)
    order = np.arange(mask.shape[1], dtype=np.float32).reshape(1, -1)
    last = F.amax(F.where(mask, order, -1.0), 1)  # (rows,)
    landed = F.embedding(F.cast(F.maximum(last, 0.0), np.int64), table)  # (rows, size)
    hit = F.reshape(F.ge(last, 0.0), (count, 1))
    return F.reshape(F.where(hit, landed, rows), data.shape)


_COMBINE = {"mul": 1.0, "max": -np.inf, "min": np.inf}
"""ScatterND's reductions besides ``add``, and the identity of each (what the updates that
do not land on a row count as)."""
MAX_UPDATES = 64
"""The most updates a run-time ``mul`` reduction multiplies out, one by one."""


def _combine(n: OnnxNode, rows: Any, mask: Any, table: Any, reduction: str) -> Any:
    """Each row of ``rows`` (R, size) combined by ``reduction`` with the rows of ``table``
    (U, size) that ``mask`` (R, U) lands on it, through an (R, U, size) tensor holding the
    landing updates and the identity elsewhere.

    Raises:
        CompileError: a ``mul`` of more than ``MAX_UPDATES`` updates.
    """
    count, updates = mask.shape
    size = table.shape[1]
    values = F.where(F.reshape(mask, (count, updates, 1)), F.reshape(table, (1, updates, size)),
                     _COMBINE[reduction])  # (R, U, size)
    if reduction == "max":
        return F.maximum(rows, F.amax(values, 1))
    if reduction == "min":
        return F.minimum(rows, F.neg(F.amax(F.neg(values), 1)))
    if updates > MAX_UPDATES:
        raise n.error(f"reduction 'mul' of {updates} updates: at most {MAX_UPDATES} multiply "
                      "at run time")
    product = rows
    for u in range(updates):
        product = F.mul(product, F.reshape(F.slice(values, 1, u, u + 1), (count, size)))
    return product


def top_k(n: OnnxNode) -> tuple[Any, Any]:
    """TopK: ``k`` is an attribute before opset 10 and input 1 from it; ``sorted=0`` allows
    any order, so sorted output serves it too."""
    x = n.input(0)
    k = int(n.known(1, "k").reshape(-1)[0]) if n.opset >= 10 else int(n.attr("k"))
    dim = n.axis(n.attr("axis", -1))
    largest = bool(n.attr("largest", 1))
    if not is_known(x) and x.dtype.kind in "iu" and x.dtype.itemsize < 4:
        values, indices = F.topk(F.cast(x, np.int32), k, dim, largest)  # widened exactly
        return F.cast(values, x.dtype), indices
    if not is_known(x) and x.dtype not in abi.TOPK_TYPES:
        raise n.error(f"TopK of a run-time {x.dtype} tensor is not supported; "
                      f"{list(abi.TOPK_TYPES)} are")
    return F.topk(x, k, dim, largest)


def reverse_sequence(n: OnnxNode) -> Any:
    """ReverseSequence at lengths known at import time: the first ``sequence_lens[b]`` steps of
    each batch entry reversed, one gather of the (time, batch) rows at known row numbers.

    Raises:
        CompileError: the time and batch axes are not 0 and 1, or not fixed.
    """
    x, lengths = n.input(0), n.known(1, "sequence_lens").astype(np.int64)
    time, batch = n.attr("time_axis", 0), n.attr("batch_axis", 1)
    if {time, batch} != {0, 1} or not all(isinstance(d, int) for d in x.shape[:2]):
        raise n.error(f"ReverseSequence needs time and batch as axes 0 and 1 of fixed size, got "
                      f"time_axis={time}, batch_axis={batch} over {list(x.shape)}")
    steps, entries = x.shape[time], x.shape[batch]
    t, b = np.meshgrid(np.arange(steps), np.arange(entries), indexing="ij")  # (T, B)
    source = np.where(t < lengths[b], lengths[b] - 1 - t, t)
    rows = source * entries + b if time == 0 else b * steps + source
    rows = rows if time == 0 else rows.T  # in the input's (axis 0, axis 1) order
    if is_known(x):
        return x.reshape(steps * entries, -1)[rows].reshape(x.shape)
    table = F.reshape(x, (steps * entries, -1))  # (T*B, rest)
    return F.reshape(F.embedding(rows, table), x.shape)


def compress(n: OnnxNode) -> Any:
    """Compress: the entries along ``axis`` (of the flattened input without one) where the
    condition, known at import, is true: one gather of rows at those positions."""
    x = n.input(0)
    condition = n.known(1, "condition").reshape(-1).astype(bool)
    axis = n.attr("axis")
    if axis is None:
        x = F.reshape(x, (-1,)) if not is_known(x) else x.reshape(-1)
        axis = 0
    axis = n.axis(axis, len(x.shape))
    length = x.shape[axis]
    if not isinstance(length, int) or len(condition) > length:
        raise n.error(f"a condition of {len(condition)} over axis {axis} of shape "
                      f"{list(x.shape)}: the axis must be fixed and no shorter")
    picked = np.flatnonzero(condition)
    if is_known(x):
        return np.take(x, picked, axis=axis)
    if not len(picked):
        raise n.error("the condition selects nothing: the result would be empty")
    order = [axis, *(d for d in range(len(x.shape)) if d != axis)]
    rows = F.permute(x, order) if axis else x
    taken = F.embedding(picked, F.reshape(rows, (length, -1)))
    taken = F.reshape(taken, (len(picked), *rows.shape[1:]))
    return F.permute(taken, [order.index(d) for d in range(len(order))]) if axis else taken


OPS: dict[str, OpFn] = {"OneHot": one_hot, "GatherND": gather_nd, "ScatterND": scatter_nd,
                        "ScatterElements": scatter_elements, "Scatter": scatter_elements,
                        "TopK": top_k, "ReverseSequence": reverse_sequence,
                        "Compress": compress}
