"""What a traced tensor offers as an ndarray: operators, methods and properties, each written
with ``nn.functional`` primitives so that tracing records them.

``ArrayMethods`` is mixed into ``SymbolicTensor``. Its semantics are numpy's; where numpy's
answer would depend on the input's values (``bool(h)``, ``h.item()``, iterating a symbolic
axis) it raises ``TraceError`` at the user's line. Methods ndarray has and this class lacks
raise ``TraceError`` too, never a bare ``AttributeError``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from nn import functional as F

from .errors import TraceError
from .graph import Shape, Value
from .trace_source import data_dependent, unsupported, user_frame

_REDUCTIONS = {"sum": F.sum, "mean": F.mean, "max": F.amax}
_FLOAT = np.dtype(np.float32)
SUPPORTED_METHODS = ("T", "all", "any", "argmax", "argmin", "astype", "clip", "copy", "dot",
                     "dtype", "flatten", "max", "mean", "min", "ndim", "prod", "ravel",
                     "reshape", "shape", "size", "squeeze", "std", "sum", "swapaxes",
                     "transpose", "var")
_MAX_UNROLL = 64
"""The longest axis ``prod`` multiplies out slice by slice, and the most rows a constant
integer index may pick from an axis by slicing (a larger one needs a fixed-shape gather)."""


class UnsupportedAttributeError(TraceError, AttributeError):
    """An ndarray attribute a traced tensor does not offer; also an ``AttributeError`` so
    that ``hasattr`` and ``getattr(x, name, default)`` keep working."""


def normalize_axes(axis: int | Sequence[int] | None, ndim: int) -> list[int]:
    """``axis`` as sorted non-negative axes (all of them for None), as numpy reads it.

    Raises:
        numpy.exceptions.AxisError: an axis out of range.
    """
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise np.exceptions.AxisError(int(a), ndim)
    return sorted({int(a) % max(ndim, 1) for a in axes})


def _as_float(x: Any) -> Any:
    if isinstance(x, ArrayMethods):
        return x if x.dtype == _FLOAT else F.cast(x, np.float32)
    return np.asarray(x, np.float32) if isinstance(x, np.ndarray) else float(x)


def logical(op: str, *operands: Any) -> Any:
    """``&``, ``|``, ``^`` or ``~`` of bool operands (traced or constant), computed in float32
    where the comparison kernels are.

    Raises:
        TraceError: an operand that is not bool (numpy's integer bitwise ops do not trace).
    """
    if any(np.dtype(getattr(v, "dtype", np.bool_)) != np.bool_ for v in operands):
        kinds = [str(getattr(v, "dtype", type(v).__name__)) for v in operands]
        raise unsupported(f"operator {op!r} on {kinds}",
                          "bitwise operators trace on bool tensors only (masks)")
    a = _as_float(operands[0])
    if op == "~":
        return F.lt(a, 0.5)
    b = _as_float(operands[1])
    if op == "&":
        return F.gt(F.mul(a, b), 0.5)
    return F.gt(F.add(a, b), 0.5) if op == "|" else F.ne(a, b)


def arithmetic(fn: Any, a: Any, b: Any) -> Any:
    """``fn(a, b)`` with a bool tensor operand counted as float32 (0 and 1), as numpy counts
    it; numpy would give float64 for a bool tensor and a Python float, a compiled model
    gives float32."""
    a, b = (F.cast(v, np.float32) if isinstance(v, ArrayMethods) and v.dtype == np.bool_ else v
            for v in (a, b))
    return fn(a, b)


def dot_product(a: Any, b: Any) -> Any:
    """``np.dot(a, b)``: a ``matmul`` while ``b`` has rank 2 or less, where the two agree.

    Raises:
        TraceError: ``b`` of rank 3 or more (``np.dot`` then pairs every matrix of ``a``
            with every matrix of ``b``).
    """
    if np.ndim(b) > 2:
        raise unsupported("np.dot with a right operand of rank > 2", "use a @ b (batched "
                          "matmul) or np.einsum, which say which axes pair")
    return F.matmul(a, b)


def floor(x: Any) -> Any:
    """``np.floor`` of a float32 tensor from truncating casts (exact for |x| < 2**63)."""
    truncated = F.cast(F.cast(x, np.int64), np.float32)
    return truncated - F.cast(F.gt(truncated, x), np.float32)


class ArrayMethods:
    """The ndarray surface of a traced tensor; needs ``value`` and ``shape``."""

    value: Value
    shape: Shape

    # --- properties -------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.value.dtype)

    @property
    def ndim(self) -> int:
        return len(self.value.shape)

    @property
    def size(self) -> int:
        symbolic = [d for d in self.value.shape if isinstance(d, str)]
        if symbolic:
            raise TraceError(f"x.size of a traced tensor with symbolic dims {symbolic} is known "
                             "only at run time; use x.shape for the fixed axes; at "
                             f"{user_frame()}")
        return math.prod(self.value.shape)  # type: ignore[arg-type]

    @property
    def T(self) -> Any:  # noqa: N802 (numpy's name)
        return self.transpose()

    # --- operators ----------------------------------------------------------------------
    def __add__(self, other: Any) -> Any: return arithmetic(F.add, self, other)
    def __radd__(self, other: Any) -> Any: return arithmetic(F.add, other, self)
    def __sub__(self, other: Any) -> Any: return arithmetic(F.sub, self, other)
    def __rsub__(self, other: Any) -> Any: return arithmetic(F.sub, other, self)
    def __mul__(self, other: Any) -> Any: return arithmetic(F.mul, self, other)
    def __rmul__(self, other: Any) -> Any: return arithmetic(F.mul, other, self)
    def __truediv__(self, other: Any) -> Any: return arithmetic(F.div, self, other)
    def __rtruediv__(self, other: Any) -> Any: return arithmetic(F.div, other, self)
    def __matmul__(self, other: Any) -> Any: return F.matmul(self, other)
    def __rmatmul__(self, other: Any) -> Any: return F.matmul(other, self)
    def __pow__(self, other: Any) -> Any: return arithmetic(F.pow, self, other)
    def __neg__(self) -> Any: return F.neg(self)
    def __pos__(self) -> Any: return self
    def __abs__(self) -> Any: return F.abs(self)
    def __lt__(self, other: Any) -> Any: return F.lt(self, other)
    def __le__(self, other: Any) -> Any: return F.le(self, other)
    def __gt__(self, other: Any) -> Any: return F.gt(self, other)
    def __ge__(self, other: Any) -> Any: return F.ge(self, other)
    def __floordiv__(self, other: Any) -> Any: return floor(F.div(self, other))
    def __rfloordiv__(self, other: Any) -> Any: return floor(F.div(other, self))
    def __mod__(self, other: Any) -> Any: return self - (self // other) * other
    def __rmod__(self, other: Any) -> Any: return other - (other // self) * self

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return NotImplemented if other is None else F.eq(self, other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return NotImplemented if other is None else F.ne(self, other)

    __hash__ = object.__hash__

    def __rpow__(self, base: Any) -> Any:
        if isinstance(base, (int, float, np.number)) and base > 0:
            return F.exp(F.mul(self, math.log(float(base))))
        return F.pow(base, self)

    def __and__(self, other: Any) -> Any: return logical("&", self, other)
    def __rand__(self, other: Any) -> Any: return logical("&", other, self)
    def __or__(self, other: Any) -> Any: return logical("|", self, other)
    def __ror__(self, other: Any) -> Any: return logical("|", other, self)
    def __xor__(self, other: Any) -> Any: return logical("^", self, other)
    def __rxor__(self, other: Any) -> Any: return logical("^", other, self)
    def __invert__(self) -> Any: return logical("~", self)

    def __lshift__(self, other: Any) -> Any:
        raise unsupported("operator '<<'", "shift integers before export, or multiply by 2**n")

    def __rshift__(self, other: Any) -> Any:
        raise unsupported("operator '>>'", "shift integers before export, or divide by 2**n")

    def __divmod__(self, other: Any) -> Any:
        raise unsupported("divmod()", "write (x // y, x % y)")

    # --- Python conversions that need values ------------------------------------------------
    def __bool__(self) -> bool:
        raise data_dependent(f"the truth value of a traced tensor ({self.value!r})")

    def __float__(self) -> float:
        raise data_dependent(f"float() of a traced tensor ({self.value!r})")

    def __int__(self) -> int:
        raise data_dependent(f"int() of a traced tensor ({self.value!r})")

    def __index__(self) -> int:
        raise data_dependent(f"a traced tensor ({self.value!r}) used as a Python int (an index "
                             "or range(); to gather rows by traced indices use "
                             "nn.functional.embedding(ids, table))")

    def __complex__(self) -> complex:
        raise data_dependent(f"complex() of a traced tensor ({self.value!r})")

    def item(self, *args: Any) -> Any:
        raise data_dependent(f"x.item() of a traced tensor ({self.value!r})")

    def tolist(self) -> Any:
        raise data_dependent(f"x.tolist() of a traced tensor ({self.value!r})")

    def __len__(self) -> int:
        first = self.value.shape[0] if self.value.shape else None
        if not isinstance(first, int):
            raise TraceError(f"len() of a traced tensor with symbolic first dim {first!r} (its "
                             f"size is known only at run time); at {user_frame()}")
        return first

    def __iter__(self) -> Iterator[Any]:
        first = self.value.shape[0] if self.value.shape else None
        if not isinstance(first, int):
            raise data_dependent(f"iteration over the symbolic axis {first!r} (its length)")
        return (self[i] for i in range(first))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        what = (f"ndarray.{name}" if hasattr(np.ndarray, name)
                else f"attribute {name!r} (ndarray has none either)")
        raise UnsupportedAttributeError(
            f"{what} is not supported on a traced tensor; supported: "
            f"{list(SUPPORTED_METHODS)}, the operators, indexing, and numpy functions on it "
            f"(np.<function>(x)); at {user_frame()}")

    # --- shape methods ----------------------------------------------------------------------
    def reshape(self, *shape: Any, order: str = "C") -> Any:
        if order != "C":
            raise unsupported(f"reshape(order={order!r})", "only order='C' traces")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return F.reshape(self, tuple(d if isinstance(d, str) else int(d) for d in shape))

    def transpose(self, *axes: Any) -> Any:
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = () if axes[0] is None else tuple(axes[0])
        order = list(range(self.ndim))[::-1] if not axes else [int(a) for a in axes]
        if sorted(a % max(self.ndim, 1) for a in order) != list(range(self.ndim)):
            raise ValueError(f"axes {order} do not permute the {self.ndim} axes of the tensor")
        order = [a % self.ndim for a in order]
        if order == list(range(self.ndim)):
            return self
        return F.permute(self, order)

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        return F.transpose(self, axis1, axis2)

    def flatten(self, order: str = "C") -> Any:
        return self.reshape(-1, order=order)

    def ravel(self, order: str = "C") -> Any:
        return self.reshape(-1, order=order)

    def squeeze(self, axis: int | Sequence[int] | None = None) -> Any:
        shape = list(self.shape)
        if axis is None:
            axes = [i for i, d in enumerate(shape) if d == 1]
        else:
            axes = normalize_axes(axis, self.ndim)
            for a in axes:
                if shape[a] != 1:
                    raise ValueError(f"cannot squeeze axis {a} of shape {list(self.value.shape)}"
                                     ": its size is not 1")
        return self if not axes else F.reshape(self, tuple(d for i, d in enumerate(shape)
                                                           if i not in axes))

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        return self if np.dtype(dtype) == self.dtype else F.cast(self, np.dtype(dtype))

    def copy(self, order: str = "C") -> Any:
        return self

    def dot(self, other: Any) -> Any:
        return dot_product(self, other)

    def clip(self, min: Any = None, max: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        out = self if min is None else F.maximum(self, min)
        return out if max is None else F.minimum(out, max)

    # --- reductions ---------------------------------------------------------------------
    def _reduce(self, name: str, axis: Any, keepdims: bool, **unused: Any) -> Any:
        for key, value in unused.items():
            if value is not None and not (key == "initial" and value is np._NoValue):
                raise unsupported(f"{name}({key}=...)", f"call {name}(axis, keepdims) and "
                                  "cast the result with astype")
        axes = normalize_axes(axis, self.ndim)
        expected = getattr(np, name)(np.zeros((1,), self.dtype)).dtype
        x: Any = self if self.dtype == _FLOAT else F.cast(self, np.float32)
        if not axes:
            out = x
        elif axes == list(range(axes[0], axes[-1] + 1)):
            out = _REDUCTIONS[name](x, tuple(axes), keepdim=keepdims)
        else:
            # NOTE: the kernels reduce one run of adjacent axes; reducing one axis at a time
            # (from the last, so earlier axis numbers stay valid) is exact for sum, mean, max.
            out = x
            for a in reversed(axes):
                out = _REDUCTIONS[name](out, a, keepdim=keepdims)
        return out if np.dtype(out.dtype) == expected else F.cast(out, expected)

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, **kwargs: Any) -> Any:
        return self._reduce("sum", axis, keepdims, dtype=dtype, out=out, **kwargs)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False, **kwargs: Any) -> Any:
        return self._reduce("mean", axis, keepdims, dtype=dtype, out=out, **kwargs)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            **kwargs: Any) -> Any:
        return self._reduce("max", axis, keepdims, out=out, **kwargs)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            **kwargs: Any) -> Any:
        low = -((-_as_float(self))._reduce("max", axis, keepdims, out=out, **kwargs))
        return low if self.dtype == _FLOAT else F.cast(low, self.dtype)

    def var(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
            keepdims: bool = False, **kwargs: Any) -> Any:
        centred = self - self.mean(axis, dtype, out, keepdims=True, **kwargs)
        out = (centred * centred).mean(axis, keepdims=keepdims)
        if ddof:
            count = math.prod(self._static(a, "var(ddof=...)")
                              for a in normalize_axes(axis, self.ndim))
            out = out * (count / (count - ddof))
        return out

    def std(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0,
            keepdims: bool = False, **kwargs: Any) -> Any:
        return F.sqrt(self.var(axis, dtype, out, ddof, keepdims, **kwargs))

    def _static(self, axis: int, call: str) -> int:
        size = self.value.shape[axis]
        if not isinstance(size, int):
            low, high = self.shape[axis].bounds  # type: ignore[union-attr]
            raise unsupported(f"{call} over the symbolic axis {axis} ({size!r} in [{low}, "
                              f"{high}])", "it needs the axis's size at export; fix that axis")
        return size

    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False, **kwargs: Any) -> Any:
        if dtype is not None or out is not None or kwargs:
            raise unsupported("prod(dtype/out/...)", "call prod(axis, keepdims)")
        result: Any = self
        for a in reversed(normalize_axes(axis, self.ndim)):
            size = self._static(a, "prod")
            if size > _MAX_UNROLL:
                raise unsupported(f"prod over an axis of {size}", "use "
                                  "np.exp(np.log(x).sum(axis)) for positive x")
            acc = F.slice(result, a, 0, 1)
            for i in range(1, size):
                acc = acc * F.slice(result, a, i, i + 1)
            result = acc if keepdims else F.squeeze(acc, a)
        return result

    def _arg_extreme(self, sign: float, axis: int | None, keepdims: bool) -> Any:
        x = self if axis is not None else self.reshape(-1)
        a = normalize_axes(0 if axis is None else axis, x.ndim)[0]
        size = x._static(a, "argmax/argmin")
        signed = _as_float(x) if sign > 0 else -_as_float(x)
        hit = F.eq(signed, F.amax(signed, a, keepdim=True))
        positions = np.arange(size, dtype=np.float32).reshape((size,) + (1,) * (x.ndim - a - 1))
        # The first position that holds the extreme, as numpy returns.
        first = -F.amax(-F.where(hit, positions, float(size)), a, keepdim=keepdims)
        if axis is None and keepdims:
            first = F.reshape(first, (1,) * self.ndim)
        return F.cast(first, np.int64)

    def argmax(self, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Any:
        return self._arg_extreme(1.0, axis, keepdims)

    def argmin(self, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Any:
        return self._arg_extreme(-1.0, axis, keepdims)

    def _nonzero(self) -> Any:
        return F.cast(self if self.dtype == np.bool_ else F.ne(_as_float(self), 0.0),
                      np.float32)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return F.gt(self._nonzero().max(axis, keepdims=keepdims), 0.5)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return F.gt(self._nonzero().min(axis, keepdims=keepdims), 0.5)
