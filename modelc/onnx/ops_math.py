"""ONNX math ops: elementwise (with broadcasting), comparisons, reductions, matrix products.

``OPS`` maps an ONNX op type to a function of an ``OnnxNode`` that returns its output(s),
written in ``nn.functional`` calls (traced, or evaluated eagerly on known values).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nn import functional as F

from ..trace import SymbolicTensor
from . import int_division
from .fold import is_known, operands
from .node import OnnxNode

OpFn = Callable[[OnnxNode], Any]

_UNARY: dict[str, Callable[[Any], Any]] = {
    "Abs": lambda x: _integer_abs(x) if _is_traced_int(x) else F.abs(x),
    "Neg": lambda x: F.mul(x, -1) if _is_traced_int(x) else F.neg(x),
    "Erf": F.erf, "Exp": F.exp, "Log": F.log, "Relu": F.relu,
    "Sigmoid": F.sigmoid, "Sqrt": F.sqrt, "Tanh": F.tanh,
    "Reciprocal": lambda x: F.div(1.0, x),
    "Tan": F.tan, "Atan": F.atan, "Asin": F.asin, "Acos": F.acos, "Sinh": F.sinh,
    "Cosh": F.cosh, "Asinh": F.asinh, "Acosh": F.acosh, "Atanh": F.atanh, "IsNaN": F.isnan,
}

def _is_traced_int(x: Any) -> bool:
    return not is_known(x) and np.dtype(x.dtype).kind == "i"


def _integer_abs(x: Any) -> Any:
    """|x| of a signed integer tensor (T5's relative positions): ``x`` where it is not
    negative, ``-x`` (wrapping multiply) elsewhere."""
    return F.where(F.lt(x, 0), F.mul(x, -1), x)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": F.add, "Sub": F.sub, "Mul": F.mul,
    "Equal": F.eq, "Less": F.lt, "LessOrEqual": F.le, "Greater": F.gt, "GreaterOrEqual": F.ge,
}

_VARIADIC: dict[str, Callable[[Any, Any], Any]] = {
    "Sum": F.add, "Max": F.maximum, "Min": F.minimum, "Mean": F.add,
}


def _l2(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    return F.sqrt(F.sum(F.mul(x, x), dim=dim, keepdim=keepdim))


def _sum_square(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    return F.sum(F.mul(x, x), dim=dim, keepdim=keepdim)


def _prod(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """numpy's on a known tensor (a shape, typically); at run time the product of the
    slices of each axis (fixed, and at most ``MAX_PROD`` long)."""
    if is_known(x):
        return np.asarray(np.prod(x, axis=dim, keepdims=keepdim), dtype=x.dtype)
    for axis in sorted(range(len(x.shape)) if dim is None else dim, reverse=True):
        size = x.shape[axis]
        if not isinstance(size, int) or size > MAX_PROD:
            raise ValueError(f"ReduceProd over axis {axis} of size {size!r}: a run-time "
                             f"product needs a fixed axis of at most {MAX_PROD}")
        product = F.slice(x, axis, 0, 1)
        for i in range(1, size):
            product = F.mul(product, F.slice(x, axis, i, i + 1))
        x = product if keepdim else F.squeeze(product, axis)
    return x


MAX_PROD = 64
"""The longest axis a run-time ReduceProd multiplies out, slice by slice."""

def _min(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """``-max(-x)``; float only, since negation wraps an integer's lowest value."""
    if np.dtype(str(x.dtype)).kind != "f":
        raise ValueError(f"ReduceMin of {x.dtype} tensors is not supported; float32 is")
    return F.neg(F.amax(F.neg(x), dim=dim, keepdim=keepdim))


def _log_sum_exp(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """``log(sum(exp(x - max))) + max``, which does not overflow."""
    top = F.amax(x, dim=dim, keepdim=True)
    total = F.sum(F.exp(F.sub(x, top)), dim=dim, keepdim=keepdim)
    return F.add(F.log(total), top if keepdim else F.amax(x, dim=dim, keepdim=False))


_REDUCE: dict[str, Callable[..., Any]] = {
    "ReduceMean": F.mean, "ReduceSum": F.sum, "ReduceMax": F.amax, "ReduceL2": _l2,
    "ReduceSumSquare": _sum_square, "ReduceProd": _prod, "ReduceMin": _min,
    "ReduceL1": lambda x, dim=None, keepdim=False: F.sum(F.abs(x), dim=dim, keepdim=keepdim),
    "ReduceLogSum": lambda x, dim=None, keepdim=False: F.log(F.sum(x, dim=dim,
                                                                   keepdim=keepdim)),
    "ReduceLogSumExp": _log_sum_exp,
}
_AXES_AS_INPUT = {"ReduceSum": 13}
"""Opset from which a reduction takes ``axes`` as input 1 instead of an attribute (18 for
the others)."""


def _unary(fn: Callable[[Any], Any]) -> OpFn:
    return lambda n: fn(n.input(0))


def _no_dim_arithmetic(n: OnnxNode, a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b``, refused where a known shape value would need arithmetic of a dim
    name: a sum or difference involving one (``'past' + 'seq'``, ``5 + 'seq'``: numpy would
    concatenate the strings or fail) or a product other than by 1 (``'batch' * 4``)."""
    if n.op_type not in ("Add", "Sub", "Mul", "Sum", "Mean") or not is_known(a, b) or all(
            np.asarray(v).dtype != object for v in (a, b)):
        return a, b
    pairs = zip(*(v.reshape(-1).tolist() for v in np.broadcast_arrays(
        np.asarray(a, object), np.asarray(b, object))))
    for x, y in pairs:
        names = [v for v in (x, y) if isinstance(v, str)]
        if names and (n.op_type != "Mul" or len(names) == 2 or 1 not in (x, y)):
            raise n.error(f"{n.op_type} of {x!r} and {y!r} in a shape computation is not "
                          f"supported: symbolic dims are names without arithmetic (such as "
                          f"a past length plus the sequence); fix {names[0]!r} with "
                          "input_shapes")
    return a, b


def _binary(fn: Callable[[Any, Any], Any]) -> OpFn:
    return lambda n: fn(*operands(*_no_dim_arithmetic(n, n.input(0), n.input(1))))


def _variadic(fn: Callable[[Any, Any], Any]) -> OpFn:
    def run(n: OnnxNode) -> Any:
        out = functools.reduce(lambda a, b: fn(*operands(*_no_dim_arithmetic(n, a, b))),
                               [n.input(i) for i in range(len(n.inputs))])
        return F.div(out, float(len(n.inputs))) if n.op_type == "Mean" else out
    return run


def pow_(n: OnnxNode) -> Any:
    """Pow; an integer exponent of a float base is cast to the base's type (ONNX lets the
    two differ, the result has the base's). A scalar exponent known at import time stays a
    ``pow`` (``expand_powers`` rewrites it); any other exponent of a float base makes
    ``_tensor_power``.

    Raises:
        CompileError: an integer base with an exponent that is not a known scalar.
    """
    a, b = n.input(0), n.input(1)
    base, exponent = np.dtype(str(a.dtype)), np.dtype(str(b.dtype))
    if base.kind == "f" and exponent.kind in "iu":
        b = b.astype(base) if is_known(b) else F.cast(b, base)
    a, b = operands(a, b)
    if is_known(a, b) or not isinstance(b, SymbolicTensor | np.ndarray):
        return F.pow(a, b)
    if base.kind != "f":
        raise n.error(f"Pow of a {base} base needs a scalar exponent known at import time, "
                      f"got a {exponent} tensor")
    return _tensor_power(a, b)


def _tensor_power(x: Any, y: Any) -> Any:
    """``x ** y`` elementwise for float tensors, as numpy's ``power``: ``exp(y * log|x|)``,
    negated where ``x < 0`` and ``y`` is an odd integer, NaN where ``x < 0`` and ``y`` is
    not an integer, and 1 where ``y == 0``. NOTE: within ``|y * log|x|| * 2**-23`` of the
    exact value, relative (the error of the float32 logarithm times the exponent)."""
    magnitude = F.exp(F.mul(*operands(y, F.log(F.abs(x)))))
    whole = F.eq(*operands(F.floor(y) if not is_known(y) else np.floor(y), y))
    halves = F.mul(*operands(y, 0.5))
    odd = F.ne(*operands(F.floor(halves) if not is_known(y) else np.floor(halves), halves))
    signed = F.where(whole, F.where(odd, F.neg(magnitude), magnitude), math.nan)
    power = F.where(F.lt(x, 0.0), signed, magnitude)
    return F.where(F.eq(*operands(y, 0.0)), 1.0, power)


def is_inf(n: OnnxNode) -> Any:
    """IsInf: ``detect_positive`` and ``detect_negative`` choose the infinities (both by
    default)."""
    x = n.input(0)
    positive, negative = n.attr("detect_positive", 1), n.attr("detect_negative", 1)
    if positive and negative:
        return F.isinf(x)
    if positive or negative:
        return F.eq(x, math.inf if positive else -math.inf)
    return F.lt(F.abs(x), -1.0)  # never true, NaN included


def div(n: OnnxNode) -> Any:
    """Div: true division for floats; integer division truncates, as ONNX specifies (exact at
    run time: ``int_division``)."""
    a, b = n.input(0), n.input(1)
    if np.dtype(a.dtype).kind in "iuO":
        if not is_known(a, b):
            return int_division.truncated(*integer_operands(n, a, b))[0]
        quotient = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -quotient, quotient).astype(a.dtype)
    return F.div(*operands(a, b))


def integer_operands(n: OnnxNode, a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` for ``int_division``: signed, or unsigned of at most 16 bits.

    Raises:
        CompileError: unsigned integers of 32 or 64 bits.
    """
    dtype = np.dtype(str(a.dtype))
    if dtype.kind == "u" and dtype.itemsize > 2:
        raise n.error(f"integer division of {dtype} tensors computed at run time is not "
                      "supported; signed integers and 8- and 16-bit unsigned ones are")
    return a, b


def _reduce(fn: Callable[..., Any]) -> OpFn:
    def run(n: OnnxNode) -> Any:
        axes_input = n.opset >= _AXES_AS_INPUT.get(n.op_type, 18)
        axes = n.ints("axes", 1) if axes_input else n.attr("axes")
        if not axes and n.attr("noop_with_empty_axes", 0):
            return n.input(0)
        dim = tuple(n.axis(a) for a in axes) if axes else None
        keepdim = bool(n.attr("keepdims", 1))
        x = n.input(0)
        reduced = range(len(x.shape)) if dim is None else dim
        if any(x.shape[a] == 0 for a in reduced):
            return _empty_reduction(n, x, reduced, keepdim)
        if x.dtype == np.bool_ and n.op_type in ("ReduceMax", "ReduceMin") and not is_known(x):
            # NOTE: any / all of bools: the float32 extreme of 0s and 1s
            return F.ne(_over(fn, F.cast(x, np.float32), dim, keepdim), 0.0)
        return _over(fn, x, dim, keepdim)
    return run


def _over(fn: Callable[..., Any], x: Any, dim: tuple[int, ...] | None, keepdim: bool) -> Any:
    """``fn(x, dim, keepdim)``; axes that are not adjacent are moved last first."""
    if dim is None or is_known(x) or _adjacent(x.shape, dim):
        return fn(x, dim=dim, keepdim=keepdim)
    kept = [a for a in range(len(x.shape)) if a not in dim]
    out = fn(F.permute(x, (*kept, *dim)), dim=tuple(range(len(kept), len(x.shape))),
             keepdim=False)  # the reduced axes moved last, where they are adjacent
    if not keepdim:
        return out
    return F.reshape(out, [1 if a in dim else d for a, d in enumerate(x.shape)])


def _adjacent(shape: Sequence[Any], dim: Sequence[int]) -> bool:
    """Whether the axes ``dim`` of ``shape`` not of size 1 are next to each other, as the
    reduction kernels need (size-1 axes move no element)."""
    axes = sorted(a for a in dim if shape[a] != 1)
    return not axes or all(shape[a] == 1 or a in axes for a in range(axes[0], axes[-1] + 1))


def _empty_reduction(n: OnnxNode, x: Any, axes: Sequence[int], keepdim: bool) -> np.ndarray:
    """A reduction over an empty set: its identity (ReduceMax the lowest value, ReduceMin
    +inf, ReduceMean NaN, the logs -inf, as ONNX's reference), a constant of the result's
    shape."""
    dtype = np.dtype(str(x.dtype))
    lowest = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    value = {"ReduceMax": lowest, "ReduceMin": np.inf, "ReduceProd": 1, "ReduceMean": np.nan,
             "ReduceLogSum": -np.inf, "ReduceLogSumExp": -np.inf}.get(n.op_type, 0)
    shape = [1 if a in axes else d for a, d in enumerate(x.shape) if keepdim or a not in axes]
    if not all(isinstance(d, int) for d in shape):
        raise n.error(f"an empty reduction over symbolic dims {shape} is not supported")
    return np.full(shape, value, dtype)


def _logical(n: OnnxNode, known: Callable[[Any, Any], Any],
             combine: Callable[[Any, Any], Any]) -> Any:
    """``known(a, b)`` on known operands; otherwise ``combine(cast(a), cast(b)) != 0`` in
    float32 (no bool primitive; bool -> float32 casts, ``mul`` and ``add`` lower to wasm)."""
    a, b = n.input(0), n.input(1)
    if is_known(a, b):
        return known(a, b)
    a, b = (F.cast(v, np.float32) for v in (a, b))
    return F.ne(combine(*operands(a, b)), 0.0)


def logical_and(n: OnnxNode) -> Any:
    """And: ``cast(a) * cast(b) != 0`` (``_logical``)."""
    return _logical(n, np.logical_and, F.mul)


def logical_or(n: OnnxNode) -> Any:
    """Or: ``cast(a) + cast(b) != 0`` (``_logical``)."""
    return _logical(n, np.logical_or, F.add)


def logical_xor(n: OnnxNode) -> Any:
    """Xor: numpy on known operands; otherwise ``a != b`` on the bools."""
    a, b = n.input(0), n.input(1)
    if is_known(a, b):
        return np.logical_xor(a, b)
    return F.ne(*operands(a, b))


def _clip_bound(n: OnnxNode, index: int, attr: str) -> Any:
    """A bound of Clip: an attribute before opset 11, then an optional input, known (a
    float) or computed at run time (a tensor, e.g. a log-mel front end's max - 80 dB)."""
    if n.opset < 11:
        return n.attr(attr)
    bound = n.optional(index)
    return n.scalar(index, attr, None) if bound is None or is_known(bound) else bound


def clip(n: OnnxNode) -> Any:
    """Clip: bounds are attributes before opset 11 and optional inputs from it."""
    out = n.input(0)
    low, high = _clip_bound(n, 1, "min"), _clip_bound(n, 2, "max")
    if low is not None:
        out = F.maximum(out, low)
    if high is not None:
        out = F.minimum(out, high)
    return out


def where(n: OnnxNode) -> Any:
    condition, a, b = n.input(0), n.input(1), n.input(2)
    if is_known(condition, a, b):
        return np.where(condition, a, b)
    a, b = operands(a, b)
    return F.where(condition, a, b)


def cast(n: OnnxNode) -> Any:
    """Cast; a known shape value naming symbolic dims stays as it is (it is integral, and a
    float32 dim is exact), e.g. for a ``Range`` of float positions up to it."""
    from onnx.helper import tensor_dtype_to_np_dtype

    return _cast_to(n.input(0), tensor_dtype_to_np_dtype(n.attr("to")))


def cast_like(n: OnnxNode) -> Any:
    """CastLike: Cast to the element type of input 1 (function bodies of opset 15 and up)."""
    return _cast_to(n.input(0), np.dtype(str(n.input(1).dtype)))


def _cast_to(x: Any, dtype: np.dtype) -> Any:
    if isinstance(x, np.ndarray) and x.dtype == object and (
            dtype.kind in "iu" or (dtype.kind == "f" and any(
                isinstance(d, str) for d in x.reshape(-1).tolist()))):
        return x
    return F.cast(x, dtype)


def matmul(n: OnnxNode) -> Any:
    """MatMul; a known 2-D right operand makes a ``linear`` (the gemm kernel's layout). A 1-D
    operand is a row (left) or a column (right) whose axis the result drops, as numpy's;
    batch axes of size 1 against larger ones are broadcast first (``_broadcast_batch``)."""
    a, b = n.input(0), n.input(1)
    row, column = len(a.shape) == 1, len(b.shape) == 1
    if row:
        a = _reshape(a, (1, a.shape[0]))
    if column:
        b = _reshape(b, (b.shape[0], 1))
    if not is_known(a) and is_known(b) and b.ndim == 2:
        out = F.linear(a, np.ascontiguousarray(b.T))
    else:
        out = F.matmul(*_broadcast_batch(a, b))
    if row or column:
        rank = len(out.shape)
        out = _reshape(out, [d for i, d in enumerate(out.shape)
                             if not (column and i == rank - 1) and not (row and i == rank - 2)])
    return out


def _reshape(x: Any, shape: Sequence[Any]) -> Any:
    return x.reshape(shape) if is_known(x) else F.reshape(x, tuple(shape))


def _broadcast_batch(a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` (both at least 3-D) with their batch axes broadcast to one shape by
    adding zeros, where some batch axis of size 1 meets a larger one."""
    if min(len(a.shape), len(b.shape)) < 3:
        return a, b
    lead = max(len(a.shape), len(b.shape)) - 2
    sides = [[1] * (lead + 2 - len(v.shape)) + list(v.shape[:-2]) for v in (a, b)]
    if sides[0] == sides[1] or not all(isinstance(d, int) for d in sides[0] + sides[1]):
        return a, b
    batch = [max(x, y) for x, y in zip(*sides)]

    def widen(v: Any) -> Any:
        target = (*batch, *v.shape[-2:])
        if is_known(v):
            return np.ascontiguousarray(np.broadcast_to(v, target))
        return F.add(v, np.zeros(target, np.dtype(str(v.dtype))))
    return widen(a), widen(b)


def gemm(n: OnnxNode) -> Any:
    """Gemm: ``alpha * A' @ B' + beta * C``; a known B becomes a ``linear`` weight."""
    a, b, c = n.input(0), n.input(1), n.optional(2)
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if n.attr("transA", 0):
        a = F.permute(a, (1, 0))
    if is_known(b) and not is_known(a):
        weight = b if n.attr("transB", 0) else b.T
        bias = None
        if is_known(c) and c is not None and c.size == weight.shape[0]:
            bias, c = (beta * c.reshape(-1)).astype(weight.dtype), None
        out = F.linear(a, np.ascontiguousarray(alpha * weight, dtype=weight.dtype), bias)
    else:
        out = F.matmul(a, F.permute(b, (1, 0)) if n.attr("transB", 0) else b)
        if alpha != 1.0:
            out = F.mul(out, alpha)
    if c is not None:
        out = F.add(*operands(out, c if beta == 1.0 else F.mul(*operands(c, beta))))
    return out


OPS: dict[str, OpFn] = {
    **{op: _unary(fn) for op, fn in _UNARY.items()},
    **{op: _binary(fn) for op, fn in _BINARY.items()},
    **{op: _variadic(fn) for op, fn in _VARIADIC.items()},
    **{op: _reduce(fn) for op, fn in _REDUCE.items()},
    "Div": div, "Pow": pow_, "IsInf": is_inf,
    "And": logical_and, "Or": logical_or, "Xor": logical_xor,
    "Clip": clip, "Where": where, "Cast": cast, "CastLike": cast_like,
    "MatMul": matmul, "Gemm": gemm,
}
