"""Numpy semantics written with ``nn.functional`` primitives, shared by the ndarray methods,
the indexing and the numpy protocols of a traced tensor: axis normalisation, numpy's
promotion of bool and int operands, bool logic."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nn import functional

from .graph import Value
from .trace_dims import SymbolicDim
from .trace_source import unsupported

if TYPE_CHECKING:
    from .trace import Tracer

F: Any = functional
"""``nn.functional``, typed loosely: traced tensors reach its primitives through the
``__nn_function__`` dispatch, which their ndarray annotations do not describe."""

FLOAT = np.dtype(np.float32)
MAX_UNROLL = 64
"""The longest axis ``prod`` multiplies out slice by slice, and the most rows a constant
integer index may pick from an axis by slicing (a larger one needs a fixed-shape gather)."""


class Traced:
    """What every part of a traced tensor's ndarray surface needs: its graph value, and
    its shape with symbolic dims as ``SymbolicDim``s."""

    value: Value
    _tracer: Tracer

    @property
    def shape(self) -> tuple[int | SymbolicDim, ...]:
        return tuple(SymbolicDim(d, self._tracer) if isinstance(d, str) else d
                     for d in self.value.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.value.dtype)

    @property
    def ndim(self) -> int:
        return len(self.value.shape)


def computed(dtype: Any) -> np.dtype:
    """The dtype a compiled model holds for numpy's ``dtype``: float32 for float64 (numpy's
    default float, which no kernel computes), else ``dtype`` itself."""
    dtype = np.dtype(dtype)
    return FLOAT if dtype == np.float64 else dtype


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


def as_float(x: Any) -> Any:
    """``x`` (traced, an array or a Python number) as float32."""
    if isinstance(x, Traced):
        return x if x.dtype == FLOAT else F.cast(x, np.float32)
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
    a = as_float(operands[0])
    if op == "~":
        return F.lt(a, 0.5)
    b = as_float(operands[1])
    if op == "&":
        return F.gt(F.mul(a, b), 0.5)
    return F.gt(F.add(a, b), 0.5) if op == "|" else F.ne(a, b)


def _kind(v: Any) -> str:
    if isinstance(v, (Traced, np.ndarray, np.generic)):
        return np.dtype(v.dtype).kind
    return "b" if isinstance(v, bool) else "f" if isinstance(v, float) else "i"


def promote(*operands: Any, true_divide: bool = False) -> list[Any]:
    """Operands of a binary op with numpy's promotion mapped onto what lowers (float32): a
    bool tensor counts as 0.0 and 1.0, an int operand meeting a float one (or a true
    division) becomes float32, and a float64 constant meeting float32 becomes float32, where
    numpy would compute in float64."""
    kinds = [_kind(v) for v in operands]
    floating = true_divide or "f" in kinds
    out = []
    for v, kind in zip(operands, kinds):
        if isinstance(v, Traced) and (kind == "b" or (floating and kind in "iu")):
            v = F.cast(v, np.float32)
        elif isinstance(v, np.ndarray) and floating and v.dtype != FLOAT:
            v = v.astype(np.float32)
        out.append(v)
    return out


def arithmetic(fn: Any, a: Any, b: Any) -> Any:
    """``fn(a, b)`` on ``promote``d operands."""
    return fn(*promote(a, b, true_divide=fn is F.div))


def power(base: Any, exponent: Any) -> Any:
    """``base ** exponent``; a positive scalar base is ``exp(exponent * log(base))``, since
    ``pow`` lowers only with a constant exponent."""
    if isinstance(base, (int, float, np.number)) and not isinstance(base, bool) and base > 0 \
            and isinstance(exponent, Traced):
        return F.exp(F.mul(as_float(exponent), math.log(float(base))))
    return arithmetic(F.pow, base, exponent)


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` on ``promote``d operands (a float64 constant weight meets float32); a 1-D
    operand is made a matrix and its axis dropped from the result, as numpy defines it,
    because the kernels multiply matrices."""
    a, b = promote(a, b)
    vector_a, vector_b = np.ndim(a) == 1, np.ndim(b) == 1
    if not (vector_a or vector_b):
        return F.matmul(a, b)
    product = F.matmul(F.reshape(a, (1, -1)) if vector_a else a,
                       F.reshape(b, (-1, 1)) if vector_b else b)
    shape = product.shape[:-2] + product.shape[-2 + vector_a:len(product.shape) - vector_b]
    return F.reshape(product, shape)


def dot_product(a: Any, b: Any) -> Any:
    """``np.dot(a, b)``: a ``matmul`` while ``b`` has rank 2 or less, where the two agree.

    Raises:
        TraceError: ``b`` of rank 3 or more (``np.dot`` then pairs every matrix of ``a``
            with every matrix of ``b``).
    """
    if np.ndim(b) > 2:
        raise unsupported("np.dot with a right operand of rank > 2", "use a @ b (batched "
                          "matmul) or np.einsum, which say which axes pair")
    return matmul(a, b)
