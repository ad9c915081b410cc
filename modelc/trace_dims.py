"""Symbolic dims as a traced forward sees them in ``x.shape``.

A ``SymbolicDim`` is a ``str`` (the dim's name, which is what graph shapes hold) that routes a
primitive called with it to the tracer, and that answers a comparison with an int the way
export must: over the dim's whole declared range. ``batch > 4`` with batch in [5, 16] is
``True``; with batch in [1, 16] no single answer holds, so it is a ``TraceError`` naming the
dim, its range and the split that would decide it. Arithmetic on a dim is refused, because a
graph shape names a dim but holds no expression of one.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import TraceError
from .trace_source import user_frame

if TYPE_CHECKING:
    from .trace import Tracer

_COMPARISONS: dict[str, tuple[str, Callable[[int, int], bool]]] = {
    "__lt__": ("<", operator.lt), "__le__": ("<=", operator.le),
    "__gt__": (">", operator.gt), "__ge__": (">=", operator.ge),
    "__eq__": ("==", operator.eq), "__ne__": ("!=", operator.ne),
}


class SymbolicDim(str):
    """A symbolic dim as ``SymbolicTensor.shape`` hands it out: a ``str`` (its name) that
    also routes a primitive called with it, e.g. ``slice(table, 0, 0, seq)`` on a constant
    table, to the tracer, so the call is recorded rather than run."""

    _tracer: Tracer

    def __new__(cls, name: str, tracer: Tracer) -> SymbolicDim:
        dim = super().__new__(cls, name)
        dim._tracer = tracer
        return dim

    @classmethod
    def __nn_function__(cls, name: str, signature: inspect.Signature,
                        arguments: dict[str, Any]) -> Any:
        from .trace import _flatten

        tracer = next(a._tracer for a in _flatten(arguments.values()) if isinstance(a, cls))
        return tracer.record(name, signature, arguments)

    @property
    def bounds(self) -> tuple[int, int]:
        """The declared ``(min, max)`` of this dim."""
        return self._tracer.graph.dims[str(self)]

    def _compare(self, method: str, other: Any) -> Any:
        symbol, test = _COMPARISONS[method]
        if not self._tracer.guard_dims or (isinstance(other, str) and symbol in ("==", "!=")):
            return getattr(str, method)(self, other)
        if isinstance(other, SymbolicDim):
            return self._order(symbol, other)
        if isinstance(other, (bool, str)) or not isinstance(other, (int, np.integer)):
            return NotImplemented
        other = int(other)
        low, high = self.bounds
        truths = {size: test(size, other) for size in {low, high, other - 1, other, other + 1}
                  if low <= size <= high}
        if len(set(truths.values())) == 1:
            return next(iter(truths.values()))
        sizes = sorted(truths)
        starts = [s for i, s in enumerate(sizes) if i == 0 or truths[s] != truths[sizes[i - 1]]]
        ends = [s - 1 for s in starts[1:]] + [high]
        pieces = ", ".join(f"({str(self)!r}, {a}, {b})" for a, b in zip(starts, ends))
        raise TraceError(
            f"branch on the symbolic dim {str(self)!r} {symbol} {other}: {str(self)!r} ranges "
            f"over [{low}, {high}], and the answer differs within it ("
            + ", ".join(f"{truths[a]} for [{a}, {b}]" for a, b in zip(starts, ends))
            + f"); export one model per range that decides it, dynamic {pieces}, or fix the "
            f"axis; at {user_frame()}")

    def _order(self, symbol: str, other: SymbolicDim) -> bool:
        """``self < other`` (or ``<=``, ``>``, ``>=``) for two dims, when their ranges decide."""
        test = next(t for s, t in _COMPARISONS.values() if s == symbol)
        (low, high), (other_low, other_high) = self.bounds, other.bounds
        answers = {test(low, other_high), test(high, other_low)}
        if len(answers) == 1:
            return answers.pop()
        raise TraceError(f"branch on {str(self)!r} {symbol} {str(other)!r}, symbolic dims in "
                         f"[{low}, {high}] and [{other_low}, {other_high}]: the ranges overlap, "
                         f"so the answer depends on the input; give them ranges that decide "
                         f"it, or fix one axis; at {user_frame()}")

    def __lt__(self, other: Any) -> Any: return self._compare("__lt__", other)
    def __le__(self, other: Any) -> Any: return self._compare("__le__", other)
    def __gt__(self, other: Any) -> Any: return self._compare("__gt__", other)
    def __ge__(self, other: Any) -> Any: return self._compare("__ge__", other)
    def __eq__(self, other: Any) -> Any: return self._compare("__eq__", other)
    def __ne__(self, other: Any) -> Any: return self._compare("__ne__", other)
    __hash__ = str.__hash__

    def _arithmetic(self, symbol: str, other: Any) -> Any:
        if isinstance(other, str) or not self._tracer.guard_dims:
            return NotImplemented
        raise TraceError(f"arithmetic on the symbolic dim {str(self)!r} ({str(self)!r} {symbol} "
                         f"{other!r}): a shape may name a symbolic dim, not an expression of "
                         "one; pass the dim itself or -1 (e.g. x.reshape(batch, -1)); at "
                         f"{user_frame()}")

    def __add__(self, other: Any) -> Any:
        result = self._arithmetic("+", other)
        return str.__add__(self, other) if result is NotImplemented else result

    def __radd__(self, other: Any) -> Any: return self._arithmetic("+", other)
    def __sub__(self, other: Any) -> Any: return self._arithmetic("-", other)
    def __rsub__(self, other: Any) -> Any: return self._arithmetic("-", other)
    def __mul__(self, other: Any) -> Any: return self._arithmetic("*", other)
    def __rmul__(self, other: Any) -> Any: return self._arithmetic("*", other)
    def __floordiv__(self, other: Any) -> Any: return self._arithmetic("//", other)
    def __truediv__(self, other: Any) -> Any: return self._arithmetic("/", other)

    def __index__(self) -> int:
        if not self._tracer.guard_dims:
            raise TypeError(f"the symbolic dim {str(self)!r} is not an int")
        low, high = self.bounds
        raise TraceError(f"the symbolic dim {str(self)!r} (in [{low}, {high}]) was used as a "
                         "Python int (range(), an index, int(), an array's shape); its size is "
                         "known only at run time: loop over a fixed axis, build constants over "
                         "the fixed axes and let broadcasting stretch them (or np.zeros_like(x), "
                         "nn.functional.full(x.shape, value)), or fix that axis; at "
                         f"{user_frame()}")

    __int__ = __index__
