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

from .errors import CompileError, TraceError
from .trace_index import getitem
from .trace_math import (
    FLOAT,
    F,
    arithmetic,
    computed,
    dot_product,
    logical,
    matmul,
    normalize_axes,
    power,
    promote,
)
from .trace_reductions import Reductions
from .trace_source import data_dependent, unsupported, user_frame

SUPPORTED_METHODS = ("T", "all", "any", "argmax", "argmin", "astype", "clip", "copy", "cumsum",
                     "dot", "dtype", "flatten", "max", "mean", "min", "ndim", "prod", "ravel",
                     "repeat", "reshape", "round", "shape", "size", "squeeze", "std", "sum",
                     "swapaxes", "transpose", "var")


class UnsupportedAttributeError(TraceError, AttributeError):
    """An ndarray attribute a traced tensor does not offer; also an ``AttributeError`` so
    that ``hasattr`` and ``getattr(x, name, default)`` keep working."""


class ArrayMethods(Reductions):
    """The ndarray surface of a traced tensor."""

    # --- properties -------------------------------------------------------------------
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

    def __getitem__(self, key: Any) -> Any:
        return getitem(self, key)

    # --- operators ----------------------------------------------------------------------
    def __add__(self, other: Any) -> Any: return arithmetic(F.add, self, other)
    def __radd__(self, other: Any) -> Any: return arithmetic(F.add, other, self)
    def __sub__(self, other: Any) -> Any: return arithmetic(F.sub, self, other)
    def __rsub__(self, other: Any) -> Any: return arithmetic(F.sub, other, self)
    def __mul__(self, other: Any) -> Any: return arithmetic(F.mul, self, other)
    def __rmul__(self, other: Any) -> Any: return arithmetic(F.mul, other, self)
    def __truediv__(self, other: Any) -> Any: return arithmetic(F.div, self, other)
    def __rtruediv__(self, other: Any) -> Any: return arithmetic(F.div, other, self)
    def __matmul__(self, other: Any) -> Any: return matmul(self, other)
    def __rmatmul__(self, other: Any) -> Any: return matmul(other, self)
    def __pow__(self, other: Any) -> Any: return power(self, other)
    def __neg__(self) -> Any: return F.neg(self)
    def __pos__(self) -> Any: return self
    def __abs__(self) -> Any: return F.abs(self)
    def __lt__(self, other: Any) -> Any: return F.lt(*promote(self, other))
    def __le__(self, other: Any) -> Any: return F.le(*promote(self, other))
    def __gt__(self, other: Any) -> Any: return F.gt(*promote(self, other))
    def __ge__(self, other: Any) -> Any: return F.ge(*promote(self, other))
    def __floordiv__(self, other: Any) -> Any: return F.floor(arithmetic(F.div, self, other))
    def __rfloordiv__(self, other: Any) -> Any: return F.floor(arithmetic(F.div, other, self))
    def __mod__(self, other: Any) -> Any: return self - (self // other) * other
    def __rmod__(self, other: Any) -> Any: return other - (other // self) * self

    def __eq__(self, other: Any) -> Any:
        return NotImplemented if other is None else F.eq(*promote(self, other))

    def __ne__(self, other: Any) -> Any:
        return NotImplemented if other is None else F.ne(*promote(self, other))

    __hash__ = object.__hash__

    def __rpow__(self, base: Any) -> Any: return power(base, self)

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
        target = tuple(d if isinstance(d, str) else int(d) for d in shape)
        symbolic = [d for d in self.value.shape if isinstance(d, str)]
        try:
            return F.reshape(self, target)
        except CompileError as err:
            if not symbolic:
                raise
            raise TraceError(f"reshape {list(self.value.shape)} -> {list(target)}: a shape "
                             f"holds a symbolic dim ({', '.join(map(repr, symbolic))}) only as "
                             "an axis of its own, never merged with others; keep it apart, "
                             "e.g. x.reshape(x.shape[0], -1, x.shape[-1]); at "
                             f"{user_frame()}") from err

    def repeat(self, repeats: int | Sequence[int], axis: int | None = None) -> Any:
        x, axis = (self.reshape(-1), 0) if axis is None else (self, axis)
        axis = normalize_axes(axis, x.ndim)[0]
        size = x._static(axis, "repeat")
        rows = np.repeat(np.arange(size), repeats)
        return x[(slice(None),) * axis + (rows,)]

    def cumsum(self, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
        return np.cumsum(self, axis, dtype, out)

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        if decimals or out is not None:
            raise unsupported("round(decimals/out)", "scale first: np.round(x * 100) / 100")
        return F.round(self)

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
        first, second = normalize_axes(axis1, self.ndim), normalize_axes(axis2, self.ndim)
        return self if first == second else F.transpose(self, first[0], second[0])

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
        target = computed(dtype)
        if target == self.dtype:
            return self
        if target == np.bool_ and self.dtype == FLOAT:
            return F.ne(self, 0.0)
        return F.cast(self, target)

    def copy(self, order: str = "C") -> Any:
        return self

    def dot(self, other: Any) -> Any:
        return dot_product(self, other)

    def clip(self, min: Any = None, max: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        out = self if min is None else F.maximum(*promote(self, min))
        return out if max is None else F.minimum(*promote(out, max))
