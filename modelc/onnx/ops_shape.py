"""ONNX data-movement and shape ops: Reshape, Transpose, Concat, Split, Slice, Gather, ...,
and the shape computations (Shape, Constant, ConstantOfShape, Range) folded at import time.

``OPS`` maps an ONNX op type to a function of an ``OnnxNode`` returning its output(s).
Known operands are computed eagerly (numpy); traced ones are recorded.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from ..trace_dims import SymbolicDim
from .fold import dims, is_known, product, shape_value
from .node import OnnxNode

OpFn = Callable[[OnnxNode], Any]
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
              "wrap": "circular"}


def reshape(n: OnnxNode) -> Any:
    """Reshape; a 0 copies the input's dim (unless ``allowzero``), dims may be names."""
    x = n.input(0)
    target = dims(n.known(1, "shape"))
    if not n.attr("allowzero", 0):
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
    return F.reshape(x, tuple(target))


def flatten(n: OnnxNode) -> Any:
    """Flatten to 2-D at ``axis``; a side whose size is a product of dim names is -1."""
    x = n.input(0)
    axis, rank = n.attr("axis", 1), n.rank()
    if not -rank <= axis <= rank:
        raise n.error(f"axis {axis} is out of range for rank {rank}; expected {-rank} to {rank}")
    axis += rank if axis < 0 else 0  # NOTE: -1 flattens at rank - 1, not rank
    sides: list[Any] = [product(x.shape[:axis]), product(x.shape[axis:])]
    if sides == [None, None]:
        raise n.error(f"cannot flatten {list(x.shape)} at axis {axis}: both sides are "
                      "products of symbolic dims")
    return F.reshape(x, [-1 if side is None else side for side in sides])


def _new_shape(n: OnnxNode, rank: int, axes: list[int], insert: bool) -> list[Any]:
    shape = list(n.input(0).shape)
    if insert:
        for a in sorted(n.axis(a, rank + len(axes)) for a in axes):
            shape.insert(a, 1)
        return shape
    drop = {n.axis(a, rank) for a in axes}
    return [d for i, d in enumerate(shape) if i not in drop]


def squeeze(n: OnnxNode) -> Any:
    x = n.input(0)
    axes = n.ints("axes", 1)
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    return F.reshape(x, tuple(_new_shape(n, len(x.shape), axes, insert=False)))


def unsqueeze(n: OnnxNode) -> Any:
    x = n.input(0)
    axes = n.ints("axes", 1) or []
    return F.reshape(x, tuple(_new_shape(n, len(x.shape), axes, insert=True)))


def concat(n: OnnxNode) -> Any:
    parts: list[Any] = [v for v in n.inputs if v is not None]
    axis = n.axis(n.attr("axis"), len(parts[0].shape))
    parts = [p for p in parts if not (is_known(p) and p.size == 0)] or parts[:1]
    if is_known(*parts):
        return np.concatenate(parts, axis=axis)
    return F.concat(parts, axis)


def split(n: OnnxNode) -> Any:
    """Split by the ``split`` sizes (attribute before opset 13, input 1 from it), else into
    ``num_outputs`` (opset 18) or as many equal parts as there are outputs."""
    x = n.input(0)
    axis = n.axis(n.attr("axis", 0))
    sizes = n.ints("split", 1) if n.opset >= 13 else n.attr("split")
    if not sizes:
        length = x.shape[axis]
        if not isinstance(length, int):
            raise n.error(f"cannot split symbolic dim {length!r} into equal parts")
        parts = n.attr("num_outputs", n.outputs)
        size = -(-length // parts)
        sizes = [min(size, length - i * size) for i in range(parts)]
    out = F.split(x, list(sizes), axis)
    return out if isinstance(out, tuple) else (out,)


def slice_(n: OnnxNode) -> Any:
    """Slice: starts/ends/axes/steps are attributes before opset 10 and inputs from it;
    ONNX clamps bounds as Python slicing does. An end may be a symbolic dim (BERT's position
    ids ``buffer[:, :seq]``): from 0 by 1, the whole axis when it is that dim, else a run-time
    slice of a fixed axis."""
    x = n.input(0)
    if n.opset >= 10:
        starts, ends = n.ints("starts", 1), dims(n.known(2, "ends"))
        axes, steps = n.ints("axes", 3), n.ints("steps", 4)
    else:
        starts, ends, axes, steps = n.attr("starts"), n.attr("ends"), n.attr("axes"), None
    assert starts is not None and ends is not None
    axes = axes or list(range(len(starts)))
    steps = steps or [1] * len(starts)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis, length = n.axis(axis), x.shape[n.axis(axis)]
        if isinstance(end, str):
            if start != 0 or step != 1:
                raise n.error(f"Slice [{start}:{end!r}:{step}] up to a symbolic dim is "
                              "supported from 0 by 1; fix the dim with input_shapes")
            if isinstance(length, int) and isinstance(end, SymbolicDim) \
                    and end.bounds[1] > length:
                raise n.error(f"Slice up to {end!r} (at most {end.bounds[1]}) of an axis of "
                              f"{length}: bound {end!r} to at most {length} (dynamic=)")
            dim: Any = end  # NOTE: F.slice annotates ints; the tracer takes a dim name
            x = x if length == end else F.slice(x, axis, 0, dim)
            continue
        if step > 0 and isinstance(length, int):
            start, end, _ = builtins.slice(start, end, step).indices(length)
        x = (x[(builtins.slice(None),) * axis + (builtins.slice(start, end, step),)]
             if is_known(x) else F.slice(x, axis, start, end, step))
    return x


def gather(n: OnnxNode) -> Any:
    """Gather: known from known; at run-time indices, an ``embedding`` of the data viewed
    as a table of rows along ``axis`` (a run-time table needs a fixed shape; negative
    indices count from the end); a run-time tensor at known indices is slices joined by
    ``concat``."""
    data, indices = n.input(0), n.input(1)
    axis = n.axis(n.attr("axis", 0), len(data.shape))
    if is_known(data, indices):
        return np.asarray(np.take(data, indices, axis=axis), dtype=data.dtype)
    if not is_known(indices):
        if indices.dtype == np.int32:  # the gather kernel reads int64 indices
            indices = F.cast(indices, np.int64)
        if is_known(data):
            table = np.moveaxis(data, axis, 0)
            rows = F.embedding(indices, table.reshape(table.shape[0], -1))
        else:
            if not all(isinstance(d, int) for d in data.shape):
                raise n.error(f"Gather of a run-time tensor of symbolic shape "
                              f"{list(data.shape)} at run-time indices is not supported")
            order = [axis, *(d for d in range(len(data.shape)) if d != axis)]
            table = F.permute(data, order) if axis else data
            length = data.shape[axis]
            indices = F.where(F.lt(indices, 0), F.add(indices, length), indices)
            rows = F.embedding(indices, F.reshape(table, (length, -1)))
        out = F.reshape(rows, (*indices.shape, *table.shape[1:]))  # (*idx, *before, *after)
        if axis == 0:
            return out
        k = len(indices.shape)
        order = [*range(k, k + axis), *range(k), *range(k + axis, len(out.shape))]
        return F.permute(out, order)
    length = data.shape[axis]
    flat = [int(i) % length if isinstance(length, int) else int(i)
            for i in indices.reshape(-1)]
    if any(i < 0 for i in flat):
        raise n.error(f"negative indices {flat} into symbolic dim {length!r}")
    parts = [F.slice(data, axis, i, i + 1) for i in flat]
    joined = parts[0] if len(parts) == 1 else F.concat(parts, axis)
    shape = data.shape
    return F.reshape(joined, (*shape[:axis], *indices.shape, *shape[axis + 1:]))


def gather_elements(n: OnnxNode) -> Any:
    """GatherElements: known from known; otherwise one ``embedding`` of the data's flattened
    elements (a column table) at flat indices: computed here for known indices, at run time
    (``indices * stride + offset``, negatives wrapped first) for run-time ones."""
    data, indices = n.input(0), n.input(1)
    axis = n.axis(n.attr("axis", 0), len(data.shape))
    if not all(isinstance(d, int) for d in (*data.shape, *indices.shape)):
        raise n.error(f"GatherElements of symbolic shapes {list(data.shape)} and "
                      f"{list(indices.shape)} is not supported; fix their dims with input_shapes")
    if len(indices.shape) != len(data.shape):
        raise n.error(f"indices rank {len(indices.shape)} != data rank {len(data.shape)}")
    length = data.shape[axis]
    coords = list(np.indices(indices.shape, dtype=np.int64))
    if is_known(indices):
        indices = np.where(indices < 0, indices + length, indices).astype(np.int64)
        if is_known(data):
            return np.take_along_axis(data, indices, axis=axis)
        coords[axis] = indices
        flat = np.ravel_multi_index(tuple(coords), data.shape)
    else:
        indices = F.cast(indices, np.int64) if indices.dtype != np.int64 else indices
        indices = F.where(F.lt(indices, 0), F.add(indices, length), indices)
        coords[axis] = np.zeros(indices.shape, np.int64)
        offset = np.ravel_multi_index(tuple(coords), data.shape)
        stride = int(np.prod(data.shape[axis + 1:]))
        flat = F.add(F.mul(indices, stride) if stride != 1 else indices, offset)
    column = F.reshape(data, (int(np.prod(data.shape)), 1))
    return F.reshape(F.embedding(flat, column), indices.shape)


def shape(n: OnnxNode) -> np.ndarray:
    """Shape (folded): int64, or an object array naming the symbolic dims."""
    full = n.input(0).shape
    return shape_value(full[n.attr("start", 0):n.attr("end", len(full))])


def size(n: OnnxNode) -> np.ndarray:
    count = product(n.input(0).shape)
    if not isinstance(count, int):
        raise n.error(f"Size of symbolic shape {list(n.input(0).shape)} is not supported")
    return np.array(count, dtype=np.int64)


_CONSTANT_ATTRS: dict[str, Callable[[Any], np.ndarray]] = {
    "value": np.asarray,
    "value_float": lambda v: np.array(v, np.float32),
    "value_floats": lambda v: np.array(v, np.float32),
    "value_int": lambda v: np.array(v, np.int64),
    "value_ints": lambda v: np.array(v, np.int64),
}


def constant(n: OnnxNode) -> np.ndarray:
    for name, make in _CONSTANT_ATTRS.items():
        if name in n.attrs:
            return make(n.attrs[name])
    raise n.error(f"needs one of the attributes {sorted(_CONSTANT_ATTRS)}, got "
                  f"{sorted(n.attrs)}")


def constant_of_shape(n: OnnxNode) -> Any:
    """ConstantOfShape: folded, or over symbolic dims a run-time ``full`` (torch's export of
    an LSTM's zero initial state over a symbolic batch)."""
    target = dims(n.known(0, "shape"))
    fill = n.attr("value", np.zeros(1, np.float32))
    return F.full(target, fill.reshape(-1)[0].item(), fill.dtype)


def eye_like(n: OnnxNode) -> np.ndarray:
    """EyeLike: ones on diagonal ``k`` of a matrix shaped as the input (2-D, fixed dims), of
    the ``dtype`` attribute's type or the input's; a constant.

    Raises:
        CompileError: an input that is not 2-D with fixed dims.
    """
    from onnx.helper import tensor_dtype_to_np_dtype

    shape = n.input(0).shape
    if len(shape) != 2 or not all(isinstance(d, int) for d in shape):
        raise n.error(f"EyeLike needs a 2-D input of fixed dims, got {list(shape)}")
    code = n.attr("dtype")
    dtype = np.dtype(str(n.input(0).dtype)) if code is None else tensor_dtype_to_np_dtype(code)
    if dtype == np.float64:
        raise n.error("EyeLike of dtype float64 is not supported; float32 and integers are")
    return np.eye(int(shape[0]), int(shape[1]), k=n.attr("k", 0), dtype=dtype)


def expand(n: OnnxNode) -> Any:
    """Expand (bidirectional broadcast): adding zeros of the target shape (bools: ``!=
    False``); a symbolic target dim the input lacks takes zeros made at run time (a ViT's
    class token expanded to the batch), and a known single element is a run-time ``full``."""
    x, target = n.input(0), dims(n.known(1, "shape"))
    if is_known(x) and all(isinstance(d, int) for d in target):
        return x * np.ones(target, dtype=x.dtype)
    rank = max(len(x.shape), len(target))
    have = [1] * (rank - len(x.shape)) + list(x.shape)
    want = [1] * (rank - len(target)) + target
    if is_known(x) and x.size == 1:  # torch.ones(t, t, dtype=bool) from dynamo
        return F.full(want, x.reshape(-1)[0].item(), x.dtype)
    if any(isinstance(w, str) and h != w for h, w in zip(have, want)) or is_known(x):
        if x.dtype == bool or any(isinstance(w, str) and h not in (1, w)
                                  for h, w in zip(have, want)):
            raise n.error(f"cannot expand {list(x.shape)} to {target}: a symbolic target "
                          "dim must be the input's or broadcast from 1 (not of bools)")
        size: Any = [h if isinstance(h, str) else w for h, w in zip(have, want)]
        return F.add(x, F.full(size, 0, x.dtype))
    zeros = np.zeros([w if isinstance(w, int) else 1 for w in want], dtype=x.dtype)
    if zeros.size == 1 and zeros.ndim <= len(x.shape):
        return x
    return F.ne(x, zeros) if x.dtype == bool else F.add(x, zeros)  # NOTE: bools do not add


def pad(n: OnnxNode) -> Any:
    """Pad: ``pads`` is an attribute before opset 11 and input 1 from it (``axes`` input 3
    from opset 18); amounts go to ``F.pad`` last axis first, from the first padded axis."""
    x = n.input(0)
    rank = len(x.shape)
    amounts = n.ints("pads", 1) if n.opset >= 11 else n.attr("pads")
    if amounts is None:
        raise n.error("needs pads")
    value = n.scalar(2, "value", 0.0) if n.opset >= 11 else n.attr("value", 0.0)
    axes = [n.axis(a, rank) for a in (n.ints("axes", 3) or range(rank))]
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begin[a], end[a] = amounts[i], amounts[len(axes) + i]
    mode = n.attr("mode", "constant")
    if mode not in _PAD_MODES:
        raise n.error(f"unknown mode {mode!r}; available: {sorted(_PAD_MODES)}")
    first = next((a for a in range(rank) if begin[a] or end[a]), rank)
    torch_pad = [p for a in reversed(range(first, rank)) for p in (begin[a], end[a])]
    if not torch_pad:
        return x
    return F.pad(x, torch_pad, _PAD_MODES[mode], value or 0.0)


def range_(n: OnnxNode) -> Any:
    """Range: folded, or up to a symbolic dim (from 0 by 1: the positions of a symbolic
    sequence) the front of a constant ``arange`` over the dim's declared maximum, sliced to
    the dim at run time.

    Raises:
        CompileError: a symbolic start or delta, or a symbolic limit with a start other than
            0 or a delta other than 1 (the length would be arithmetic of the dim).
    """
    start, limit, delta = (n.known(i, name) for i, name in
                           enumerate(("start", "limit", "delta")))
    dtype = next((v.dtype for v in (start, limit, delta) if v.dtype != object), np.int64)
    if any(isinstance(v, str) for v in (*dims(start), *dims(limit), *dims(delta))):
        return _range_to_dim(n, start, limit, delta, np.dtype(dtype))
    # NOTE: a fixed dim read from a shape that names other dims is an int in an object array
    bounds = [v.item() if v.dtype != object else int(v.item()) for v in (start, limit, delta)]
    return np.arange(*bounds, dtype=dtype)


def _range_to_dim(n: OnnxNode, start: np.ndarray, limit: np.ndarray, delta: np.ndarray,
                  dtype: np.dtype) -> Any:
    """``arange(0, dim, 1)``: a constant table's first ``dim`` elements."""
    dim = limit.reshape(-1)[0]
    if not isinstance(dim, SymbolicDim) or isinstance(start.reshape(-1)[0], str) \
            or isinstance(delta.reshape(-1)[0], str) or start.item() != 0 or delta.item() != 1:
        raise n.error(f"Range({start.tolist()!r}, {limit.tolist()!r}, {delta.tolist()!r}) over "
                      "a symbolic dim is supported from 0 by 1 up to the dim; fix the dim with "
                      "input_shapes")
    return F.arange(dim, dtype)


def tile(n: OnnxNode) -> Any:
    x, repeats = n.input(0), [int(r) for r in n.known(1, "repeats")]
    if is_known(x):
        return np.tile(x, repeats)
    for axis, count in enumerate(repeats):
        x = x if count == 1 else F.concat([x] * count, axis)
    return x


def _identity(n: OnnxNode) -> Any:
    return n.input(0)


def dropout(n: OnnxNode) -> Any:
    """Dropout at inference: the input, and an all-true mask when asked for.

    Raises:
        CompileError: ``training_mode`` is true or not known at import time (random
            dropout is not supported), or the mask is asked for over symbolic dims.
    """
    x = n.input(0)
    if n.has(2) and bool(n.known(2, "training_mode").reshape(-1)[0]):
        raise n.error("training_mode=true (random dropout) is not supported")
    if n.outputs < 2:
        return x
    if not all(isinstance(d, int) for d in x.shape):
        raise n.error(f"the mask output needs a static input shape, got {list(x.shape)}")
    return x, np.ones(x.shape, bool)


def logical_not(n: OnnxNode) -> Any:
    """Not: numpy on a known operand; otherwise ``cast(x) == 0`` in float32, as ``And`` (the
    comparisons lower for float32 operands)."""
    x = n.input(0)
    return np.logical_not(x) if is_known(x) else F.eq(F.cast(x, np.float32), 0.0)


OPS: dict[str, OpFn] = {
    "Reshape": reshape, "Flatten": flatten, "Squeeze": squeeze, "Unsqueeze": unsqueeze,
    "Transpose": lambda n: F.permute(n.input(0), tuple(
        n.attr("perm") or reversed(range(n.rank())))),
    "Concat": concat, "Split": split, "Slice": slice_, "Gather": gather,
    "GatherElements": gather_elements,
    "Shape": shape, "Size": size, "Constant": constant, "ConstantOfShape": constant_of_shape,
    "Expand": expand, "Pad": pad, "Range": range_, "Tile": tile, "Not": logical_not,
    "Identity": _identity, "Dropout": dropout, "EyeLike": eye_like,
}
