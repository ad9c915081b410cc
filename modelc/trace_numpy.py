"""numpy's own protocols on a traced tensor: ``np.tanh(h)`` reaches ``__array_ufunc__`` and
``np.concatenate([h, g])`` reaches ``__array_function__``; each is written here with
``nn.functional`` primitives and the ndarray methods of ``trace_methods``.

A ufunc without an entry here is looked up in ``nn.functional`` by its numpy name, so a
primitive of that name (``sin``, ``floor``) serves ``np.sin`` with no change here. Anything
else is a ``TraceError`` that names the call, the user's line and the supported calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from nn._dispatch import is_primitive

from .trace_einsum import einsum as traced_einsum
from .trace_index import gather, getitem
from .trace_math import (
    F,
    Traced,
    arithmetic,
    as_float,
    computed,
    dot_product,
    logical,
    matmul,
    normalize_axes,
    power,
    promote,
)
from .trace_source import data_dependent, unsupported

_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _nonzero(x: Any) -> Any:
    """``x`` as a bool mask (numpy's truth of a number: nonzero)."""
    if np.dtype(getattr(x, "dtype", np.bool_)) == np.bool_:
        return x
    return F.ne(as_float(x), 0.0) if isinstance(x, Traced) else np.asarray(x) != 0


def _floor_divide(a: Any, b: Any) -> Any:
    return F.floor(arithmetic(F.div, a, b))


def _promoted(fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda a, b: fn(*promote(a, b))


UFUNCS: dict[str, Callable[..., Any]] = {
    **{name: partial(arithmetic, fn) for name, fn in (
        ("add", F.add), ("subtract", F.sub), ("multiply", F.mul), ("divide", F.div))},
    "power": power,
    **{name: _promoted(fn) for name, fn in (
        ("maximum", F.maximum), ("minimum", F.minimum), ("greater", F.gt),
        ("greater_equal", F.ge), ("less", F.lt), ("less_equal", F.le), ("equal", F.eq),
        ("not_equal", F.ne))},
    "negative": F.neg, "positive": lambda x: x, "absolute": F.abs, "fabs": F.abs,
    "exp": F.exp, "log": F.log, "sqrt": F.sqrt, "tanh": F.tanh, "matmul": matmul,
    "rint": F.round, "isnan": lambda x: F.ne(x, x),
    "isinf": lambda x: F.eq(F.abs(x), np.inf), "isfinite": lambda x: F.lt(F.abs(x), np.inf),
    "log1p": lambda x: F.log(F.add(x, 1.0)), "expm1": lambda x: F.sub(F.exp(x), 1.0),
    "hypot": lambda a, b: F.sqrt(arithmetic(F.add, F.mul(a, a), F.mul(b, b))),
    "exp2": lambda x: F.exp(F.mul(x, _LN2)), "log2": lambda x: F.div(F.log(x), _LN2),
    "log10": lambda x: F.div(F.log(x), _LN10), "square": lambda x: F.mul(x, x),
    "reciprocal": lambda x: F.div(1.0, x),
    "sign": F.sign,
    "floor_divide": _floor_divide,
    "remainder": lambda a, b: arithmetic(F.sub, a, arithmetic(F.mul, _floor_divide(a, b), b)),
    "bitwise_and": lambda a, b: logical("&", a, b), "bitwise_or": lambda a, b: logical("|", a, b),
    "bitwise_xor": lambda a, b: logical("^", a, b), "invert": lambda a: logical("~", a),
    "logical_and": lambda a, b: logical("&", _nonzero(a), _nonzero(b)),
    "logical_or": lambda a, b: logical("|", _nonzero(a), _nonzero(b)),
    "logical_xor": lambda a, b: logical("^", _nonzero(a), _nonzero(b)),
    "logical_not": lambda a: logical("~", _nonzero(a)),
}
_REDUCE = {"add": "sum", "maximum": "max", "minimum": "min", "multiply": "prod"}


def _ufunc(name: str) -> Callable[..., Any] | None:
    fn = UFUNCS.get(name) or getattr(F, name, None)
    return fn if fn is not None and (name in UFUNCS or is_primitive(fn)) else None


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """``ufunc(*inputs)`` (or ``ufunc.reduce``) on traced operands.

    Raises:
        TraceError: a ufunc, method or keyword with no traced form.
    """
    call = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    extra = sorted(k for k, v in kwargs.items() if v is not None and not
                   (method == "reduce" and k in ("axis", "keepdims")))
    if extra:
        raise unsupported(f"{call}(..., {', '.join(f'{k}=' for k in extra)})",
                          "call it without them and use the returned value")
    if method == "reduce" and ufunc.__name__ in _REDUCE:
        axis = kwargs.get("axis", 0)
        return getattr(inputs[0], _REDUCE[ufunc.__name__])(axis,
                                                           keepdims=bool(kwargs.get("keepdims")))
    fn = _ufunc(ufunc.__name__)
    if method != "__call__" or fn is None:
        raise unsupported(call, f"supported ufuncs: {sorted(UFUNCS)} (np.add.reduce and the "
                          "like via .sum/.max/.min/.prod), or write it with those")
    return fn(*(float(v) if isinstance(v, np.generic) and v.ndim == 0 else v for v in inputs))


# --- numpy functions -----------------------------------------------------------------------

def _no_out(out: Any, call: str) -> None:
    if out is not None:
        raise unsupported(f"{call}(..., out=...)", "use the returned value")


def concatenate(arrays: Sequence[Any], axis: int | None = 0, out: Any = None,
                **kwargs: Any) -> Any:
    _no_out(out, "np.concatenate")
    if axis is None:
        return F.concat(promote(*(np.ravel(a) for a in arrays)), 0)
    return F.concat(promote(*arrays), axis)


def stack(arrays: Sequence[Any], axis: int = 0, out: Any = None, **kwargs: Any) -> Any:
    _no_out(out, "np.stack")
    return F.concat(promote(*(np.expand_dims(a, axis) for a in arrays)), axis)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None and y is None:
        raise data_dependent("np.where(condition) with one argument returns indices whose "
                             "number")
    values = [float(v) if isinstance(v, np.generic) else v for v in (x, y)]
    return F.where(_nonzero(condition), *promote(*values))


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    axes = normalize_axes(axis, a.ndim + (1 if isinstance(axis, int) else len(axis)))
    shape = list(a.shape)
    for ax in axes:
        shape.insert(ax, 1)
    return F.reshape(a, tuple(shape))


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    src = [int(s) % a.ndim for s in np.atleast_1d(source)]
    dst = [int(d) % a.ndim for d in np.atleast_1d(destination)]
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(order)


def dot(a: Any, b: Any, out: Any = None) -> Any:
    _no_out(out, "np.dot")
    return dot_product(a, b)


def take(a: Any, indices: Any, axis: int | None = None, out: Any = None,
         mode: str = "raise") -> Any:
    _no_out(out, "np.take")
    if axis is None:
        a, axis = np.ravel(a), 0
    axis = normalize_axes(axis, a.ndim)[0]
    if isinstance(a, Traced) and not isinstance(indices, Traced):
        return getitem(a, (slice(None),) * axis + (np.asarray(indices),))
    if np.ndim(indices) == 0 and not isinstance(indices, Traced):
        return getitem(a, (slice(None),) * axis + (int(indices),))
    return gather(a, axis, indices)


def split(ary: Any, indices_or_sections: int | Sequence[int], axis: int = 0) -> Any:
    size = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        if not isinstance(size, int) or size % indices_or_sections:
            raise ValueError(f"array split does not result in an equal division: axis {axis} "
                             f"of {size!r} into {indices_or_sections}")
        return list(F.split(ary, size // indices_or_sections, axis))
    bounds = [0, *indices_or_sections, size]
    return list(F.split(ary, [b - a for a, b in zip(bounds, bounds[1:])], axis))


def flip(m: Any, axis: int | Sequence[int] | None = None) -> Any:
    key = [slice(None)] * m.ndim
    for ax in normalize_axes(axis, m.ndim):
        key[ax] = slice(None, None, -1)
    return getitem(m, tuple(key))


def clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, *,
         min: Any = None, max: Any = None, **kwargs: Any) -> Any:  # noqa: A002
    _no_out(out, "np.clip")
    low = a_min if a_min is not None else min
    high = a_max if a_max is not None else max
    out = a if low is None else F.maximum(*promote(a, low))
    return out if high is None else F.minimum(*promote(out, high))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
              "wrap": "circular"}


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    if mode not in _PAD_MODES:
        raise unsupported(f"np.pad(mode={mode!r})", f"modes that trace: {sorted(_PAD_MODES)}")
    value = kwargs.pop("constant_values", 0.0)
    if kwargs or np.ndim(value) != 0:
        raise unsupported(f"np.pad with {sorted(kwargs) or 'per-axis constant_values'}",
                          "one scalar constant_values")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (array.ndim, 2))
    padded = [i for i in range(array.ndim) if widths[i].any()]
    if not padded:
        return array
    # nn.functional.pad lists (before, after) from the last axis backwards, as torch does.
    amounts = [int(w) for axis in range(array.ndim - 1, padded[0] - 1, -1)
               for w in widths[axis]]
    return F.pad(array, amounts, _PAD_MODES[mode], float(value))


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    if ord in (None, 2, "fro") and (axis is None or np.ndim(axis) == 0 or ord is not None):
        return F.sqrt((x * x).sum(axis, keepdims=keepdims))
    if ord == 1 and np.ndim(axis) == 0 and axis is not None:
        return abs(x).sum(axis, keepdims=keepdims)
    if ord == np.inf and np.ndim(axis) == 0 and axis is not None:
        return abs(x).max(axis, keepdims=keepdims)
    raise unsupported(f"np.linalg.norm(ord={ord!r}, axis={axis!r})", "the 2-norm (ord=None, "
                      "any axes), or ord=1 / np.inf over one axis")


def _triangle(lower: bool) -> Callable[..., Any]:
    def triangle(m: Any, k: int = 0) -> Any:
        rows, cols = m.value.shape[-2:]
        if not isinstance(rows, int) or not isinstance(cols, int):
            raise unsupported(f"np.{'tril' if lower else 'triu'} of a tensor whose last two "
                              f"axes {[rows, cols]} are not fixed", "fix those axes")
        return (F.tril if lower else F.triu)(m, k)
    return triangle


def cumsum(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    _no_out(out, "np.cumsum")
    x: Any = np.ravel(a) if axis is None else a
    axis = 0 if axis is None else axis
    x = x if dtype is None else x.astype(dtype)
    axis = normalize_axes(axis, x.ndim)[0]
    x._static(axis, "np.cumsum")
    sums = F.cumsum(as_float(x), axis)
    expected = computed(np.cumsum(np.zeros(1, x.dtype)).dtype)
    return sums if np.dtype(sums.dtype) == expected else F.cast(sums, expected)


def broadcast_to(array: Any, shape: Sequence[Any], subok: bool = False) -> Any:
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    source = [str(d) for d in array.value.shape]
    target = [str(d) for d in shape]
    if len(source) > len(target) or any(d not in ("1", t) for d, t in
                                        zip(source[::-1], target[::-1])):
        raise ValueError(f"cannot broadcast a tensor of shape {list(array.value.shape)} to "
                         f"{list(shape)}")
    zeros = np.zeros([1 if isinstance(d, str) else int(d) for d in shape], np.float32)
    return arithmetic(F.add, array, zeros)


def tile(a: Any, reps: int | Sequence[int]) -> Any:
    reps = [reps] if isinstance(reps, int) else list(reps)
    x = a if len(reps) <= a.ndim else F.reshape(a, (1,) * (len(reps) - a.ndim) + a.shape)
    reps = [1] * (x.ndim - len(reps)) + reps
    for axis, count in enumerate(reps):
        if count != 1:
            x = F.concat([x] * int(count), axis)
    return x


def _like(value: float | None) -> Callable[..., Any]:
    def full_like(a: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        fill = args[0] if value is None else value
        if any(isinstance(d, str) for d in a.value.shape):
            # A symbolic shape is known at run time only: a full node fills it there.
            return F.full(a.shape, float(fill), computed(dtype or a.dtype))
        return np.full(a.value.shape, fill, computed(dtype or a.dtype))
    return full_like


def einsum(subscripts: Any, *operands: Any, out: Any = None, **kwargs: Any) -> Any:
    _no_out(out, "np.einsum")
    return traced_einsum(subscripts, *operands)


def _method(name: str) -> Callable[..., Any]:
    def call(a: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs = {k: v for k, v in kwargs.items() if v is not np._NoValue}
        return getattr(a, name)(*args, **kwargs)
    return call


FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    **{getattr(np, name): _method(method) for name, method in {
        "sum": "sum", "mean": "mean", "max": "max", "amax": "max", "min": "min",
        "amin": "min", "prod": "prod", "argmax": "argmax", "argmin": "argmin", "var": "var",
        "std": "std", "any": "any", "all": "all", "squeeze": "squeeze",
        "transpose": "transpose", "swapaxes": "swapaxes", "ravel": "ravel",
        "reshape": "reshape"}.items()},
    np.concatenate: concatenate, np.stack: stack, np.where: where, np.einsum: einsum,
    np.expand_dims: expand_dims, np.moveaxis: moveaxis, np.dot: dot, np.take: take,
    np.split: split, np.flip: flip, np.clip: clip,
    np.zeros_like: _like(0.0), np.ones_like: _like(1.0), np.full_like: _like(None),
    np.pad: pad, np.linalg.norm: norm, np.round: _method("round"), np.around: _method("round"),
    np.repeat: _method("repeat"), np.tril: _triangle(True), np.triu: _triangle(False),
    np.cumsum: cumsum, np.broadcast_to: broadcast_to, np.tile: tile,
    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim, np.size: lambda a: a.size,
}


def array_function(func: Callable[..., Any], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """``func(*args, **kwargs)``, a numpy function called with a traced tensor among its
    arguments.

    Raises:
        TraceError: a function with no traced form.
    """
    handler = FUNCTIONS.get(func)
    if handler is None:
        names = sorted({f.__name__ for f in FUNCTIONS})
        module = "np.linalg." if func.__module__.endswith("linalg") else "np."
        raise unsupported(f"{module}{func.__name__}", f"supported numpy functions: {names} and the "
                          f"ufuncs {sorted(UFUNCS)}; or write it with nn.functional")
    return handler(*args, **kwargs)
