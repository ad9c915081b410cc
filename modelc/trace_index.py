"""``x[key]`` on a traced tensor, with numpy's semantics, as slices, one reshape and a gather.

Ints and slices (steps and negative steps too) become ``slice`` nodes, ``None`` and the axes
ints drop become one ``reshape``, ``...`` fills the axes not named. One integer array picks
rows: by ``embedding`` (a gather) when the tensor's shape is fixed, else, for a constant
index of at most a few dozen entries, by slices joined with ``concat``. A constant boolean
mask is its ``nonzero`` indices; a traced mask would give a shape that depends on the input,
which a compiled model cannot have, so it is a ``TraceError``.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import numpy as np

from .errors import TraceError
from .trace_math import MAX_UNROLL, F, Traced
from .trace_source import unsupported, user_frame

Entry = int | builtins.slice | None | np.ndarray | Traced


def _entry(k: Any) -> Any:
    """One subscript entry in a canonical form: ints, slices, None, ..., arrays, tensors."""
    if isinstance(k, Traced):
        if k.dtype == np.bool_:
            raise TraceError("a boolean mask that is a traced tensor selects a number of "
                             "elements that depends on the input; keep the shape and zero the "
                             f"rest with np.where(mask, x, 0); at {user_frame()}")
        if not np.issubdtype(k.dtype, np.integer):
            raise IndexError(f"a traced index must have an integer dtype, got {k.dtype}")
        return k
    if isinstance(k, (bool, np.bool_)):
        raise unsupported("a Python bool as an index", "use x[None] to add an axis")
    if isinstance(k, (int, np.integer)):
        return int(k)
    if isinstance(k, builtins.slice):
        return builtins.slice(*(v if v is None or isinstance(v, str) else operator.index(v)
                                for v in (k.start, k.stop, k.step)))
    if k is None or k is Ellipsis:
        return k
    if isinstance(k, str):
        raise unsupported(f"indexing with the dim name {k!r}", "slice with ints")
    array = np.asarray(k)
    if array.dtype != np.bool_ and not np.issubdtype(array.dtype, np.integer):
        raise IndexError(f"index arrays must have an integer or bool dtype, got {array.dtype}")
    return array


def _expand(x: Any, key: Any) -> tuple[Any, list[Entry]]:
    """The key with ``...`` expanded and every constant boolean mask replaced by integer
    indices (a mask over several axes first merges them, which needs their sizes fixed)."""
    entries = [_entry(k) for k in (key if isinstance(key, tuple) else (key,))]
    ellipses = [i for i, e in enumerate(entries) if e is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = builtins.sum(0 if e is None or e is Ellipsis else
                        e.ndim if isinstance(e, np.ndarray) and e.dtype == np.bool_ else 1
                        for e in entries)
    if used > x.ndim:
        raise IndexError(f"too many indices: {used} for a tensor of rank {x.ndim}")
    if ellipses:
        at = ellipses[0]
        entries[at:at + 1] = [builtins.slice(None)] * (x.ndim - used)
    out: list[Entry] = []
    axis = 0
    for e in entries:
        if isinstance(e, np.ndarray) and e.dtype == np.bool_:
            sizes = x.value.shape[axis:axis + e.ndim]
            if tuple(sizes) != e.shape:
                raise IndexError(f"boolean mask of shape {e.shape} does not match the axes "
                                 f"{axis}..{axis + e.ndim - 1} of shape {list(x.value.shape)}")
            if e.ndim != 1:
                x = F.reshape(x, (*x.shape[:axis], math.prod(e.shape), *x.shape[axis + e.ndim:]))
            e = np.flatnonzero(e)
        out.append(e)
        axis += e is not None
    return x, out


def _window(x: Any, axis: int, k: builtins.slice) -> Any:
    """``x[..., k, ...]`` on ``axis`` for a slice ``k``."""
    size = x.value.shape[axis]
    if isinstance(size, int):
        picked = range(size)[k]
        if len(picked) == 0:
            raise unsupported(f"the empty slice {k} of an axis of {size}",
                              "a compiled model has no empty tensors")
        if picked == range(size):
            return x
        return F.slice(x, axis, k.start, k.stop, 1 if k.step is None else k.step)
    start, stop, step = k.start or 0, k.stop, 1 if k.step is None else k.step
    if step == 1 and start == 0 and (stop is None or (isinstance(stop, str) and stop == size)):
        return x
    low, high = x.shape[axis].bounds
    if step == 1 and isinstance(stop, int) and 0 <= start < stop <= low:
        return F.slice(x, axis, start, stop)
    raise unsupported(f"the slice {k} of the symbolic axis {axis} ({size!r} in [{low}, {high}])",
                      "its length would depend on the input; on a symbolic axis take the "
                      f"whole axis or a fixed window a:b with 0 <= a < b <= {low}")


def _one(x: Any, axis: int, i: int) -> Any:
    """``x[..., i:i+1, ...]`` for an int index ``i`` on ``axis``."""
    size = x.value.shape[axis]
    if isinstance(size, int):
        if not -size <= i < size:
            raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
        i %= size
    else:
        low, high = x.shape[axis].bounds
        if not 0 <= i < low:
            raise unsupported(f"the index {i} on the symbolic axis {axis} ({size!r} in "
                              f"[{low}, {high}])", f"index it from the front with 0 <= i < {low}")
    return x if size == 1 else F.slice(x, axis, i, i + 1)


def gather(x: Any, axis: int, index: np.ndarray | Traced) -> Any:
    """Rows ``index`` of ``axis`` of ``x`` (traced, or a constant table): the axis replaced
    by ``index.shape``.

    Raises:
        IndexError: a constant index out of bounds.
        TraceError: a traced index into a tensor whose shape is not fixed, or a long
            constant index on one whose shape is not fixed.
    """
    shape = tuple(x.value.shape) if isinstance(x, Traced) else np.shape(x)
    static = builtins.all(isinstance(d, int) for d in shape)
    if isinstance(index, np.ndarray):
        size = shape[axis]
        if not isinstance(size, int):
            low, high = x.shape[axis].bounds
            if index.size and 0 <= index.min() and index.max() < low:
                return _gather_by_slices(x, axis, index.astype(np.int64))
            raise unsupported(f"the index array {index.tolist()} on the symbolic axis {axis} "
                              f"({size!r} in [{low}, {high}])", "gather along a fixed axis, "
                              f"or pick rows 0 <= i < {low} there")
        if index.size and not (-size <= index.min() and index.max() < size):
            raise IndexError(f"index array spans [{index.min()}, {index.max()}], out of bounds "
                             f"for axis {axis} with size {size}")
        index = (index % size).astype(np.int64)
        if not static:
            return _gather_by_slices(x, axis, index)
    elif not static:
        raise unsupported(f"indexing a tensor of shape {list(shape)} with a traced index",
                          "the gathered tensor needs a fixed shape (a table)")
    elif index.dtype != np.int64:
        index = F.cast(index, np.int64)
    moved = x if axis == 0 else F.permute(x, [axis, *(a for a in range(x.ndim) if a != axis)])
    rest = [d for a, d in enumerate(shape) if a != axis]
    table = F.reshape(moved, (shape[axis], math.prod(rest)))  # (rows, everything else)
    picked = F.embedding(index, table)
    picked = F.reshape(picked, (*index.shape, *rest))  # (*index, *rest)
    if axis == 0:
        return picked
    lead = index.ndim
    order = [*range(lead, lead + axis), *range(lead), *range(lead + axis, picked.ndim)]
    return F.permute(picked, order)


def _gather_by_slices(x: Any, axis: int, index: np.ndarray) -> Any:
    if index.size > MAX_UNROLL or index.size == 0:
        raise unsupported(f"an index array of {index.size} entries on a tensor with symbolic "
                          f"dims {list(x.value.shape)}",
                          f"index at most {MAX_UNROLL} rows, or fix the other axes")
    rows = [F.slice(x, axis, int(i), int(i) + 1) for i in index.reshape(-1)]
    joined = rows[0] if len(rows) == 1 else F.concat(rows, axis)
    if index.ndim == 1:
        return joined
    return F.reshape(joined, (*x.shape[:axis], *index.shape, *x.shape[axis + 1:]))


def getitem(x: Any, key: Any) -> Any:
    """``x[key]`` with numpy's semantics for ints, slices, None, ..., one integer array (or a
    constant boolean mask) alongside them.

    Raises:
        IndexError: an index out of bounds, or too many indices.
        TraceError: an index whose result shape would depend on the input, or a form not
            traced (several index arrays); the message names the alternative.
    """
    if x.dtype == np.bool_:
        # NOTE: the copy kernels move float32; a mask is moved as 0.0 and 1.0.
        return F.gt(getitem(F.cast(x, np.float32), key), 0.5)
    x, entries = _expand(x, key)
    arrays = [i for i, e in enumerate(entries) if isinstance(e, (np.ndarray, Traced))]
    if len(arrays) > 1:
        raise unsupported("several index arrays in one subscript",
                          "index one axis at a time: x[rows][:, cols]")
    shape: list[Any] = []
    axis, array_at = 0, None
    for e in entries:
        if e is None:
            shape.append(1)
            continue
        if isinstance(e, builtins.slice):
            x = _window(x, axis, e)
        elif isinstance(e, int):
            x = _one(x, axis, e)
        else:
            array_at = len(shape)
        if not isinstance(e, int):
            shape.append(x.shape[axis])
        axis += 1
    shape.extend(x.shape[axis:])
    if [str(d) for d in shape] != [str(d) for d in x.value.shape]:
        x = F.reshape(x, tuple(shape))
    if array_at is None:
        return x
    index = entries[arrays[0]]
    assert isinstance(index, (np.ndarray, Traced))  # NOTE: arrays lists exactly these
    x = gather(x, array_at, index)
    ints = [i for i, e in enumerate(entries) if isinstance(e, int)]
    advanced = sorted(ints + arrays)
    if advanced[-1] - advanced[0] + 1 == len(advanced) or array_at == 0:
        return x
    # numpy puts the index's axes first when ints and the array are not adjacent.
    lead = index.ndim
    order = [*range(array_at, array_at + lead), *range(array_at),
             *range(array_at + lead, x.ndim)]
    return F.permute(x, order)
