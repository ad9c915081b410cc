"""The reductions of a traced tensor's ndarray surface: ``sum mean max min prod argmax
argmin var std any all``, with numpy's axes, keepdims and result dtypes.

The kernels reduce one run of adjacent axes in float32: other dtypes are cast to float32 and
the result back to numpy's dtype, and several non-adjacent axes are reduced one at a time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .trace_math import FLOAT, MAX_UNROLL, F, Traced, as_float, computed, normalize_axes
from .trace_source import unsupported

_REDUCTIONS = {"sum": F.sum, "mean": F.mean, "max": F.amax}


def _no_out(out: Any, name: str) -> None:
    if out is not None:
        raise unsupported(f"{name}(out=...)", "use the returned value")


class Reductions(Traced):
    """Reductions over axes, as ndarray methods."""

    # --- reductions ---------------------------------------------------------------------
    def _reduce(self, name: str, axis: Any, keepdims: bool, dtype: Any = None, out: Any = None,
                initial: Any = np._NoValue, where: Any = True) -> Any:
        _no_out(out, name)
        x: Any = self if dtype is None else self.astype(dtype)  # type: ignore[attr-defined]
        if where is not True:
            if name != "sum":
                raise unsupported(f"{name}(where=...)", "select first with np.where(mask, x, "
                                  "fill), then reduce")
            x = F.where(where, x, 0.0)
        axes = normalize_axes(axis, x.ndim)
        expected = computed(getattr(np, name)(np.zeros((1,), x.dtype)).dtype)
        x = as_float(x)
        if not axes:
            result = x
        elif axes == list(range(axes[0], axes[-1] + 1)):
            result = _REDUCTIONS[name](x, tuple(axes), keepdim=keepdims)
        else:
            # NOTE: the kernels reduce one run of adjacent axes; reducing one axis at a time
            # (from the last, so earlier axis numbers stay valid) is exact for sum, mean, max.
            result = x
            for a in reversed(axes):
                result = _REDUCTIONS[name](result, a, keepdim=keepdims)
        if initial is not np._NoValue:
            result = (F.add if name == "sum" else F.maximum)(result, float(initial))
        return result if np.dtype(result.dtype) == expected else F.cast(result, expected)

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, **kwargs: Any) -> Any:
        return self._reduce("sum", axis, keepdims, dtype, out, **kwargs)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False, **kwargs: Any) -> Any:
        return self._reduce("mean", axis, keepdims, dtype, out, **kwargs)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            **kwargs: Any) -> Any:
        return self._reduce("max", axis, keepdims, None, out, **kwargs)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            initial: Any = np._NoValue, where: Any = True) -> Any:
        if where is not True:
            raise unsupported("min(where=...)", "select first with np.where(mask, x, fill), "
                              "then reduce")
        flipped = np._NoValue if initial is np._NoValue else -initial
        low = -((-as_float(self))._reduce("max", axis, keepdims, None, out, flipped))
        return low if self.dtype == FLOAT else F.cast(low, self.dtype)

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
            if size > MAX_UNROLL:
                raise unsupported(f"prod over an axis of {size}", "use "
                                  "np.exp(np.log(x).sum(axis)) for positive x")
            acc = F.slice(result, a, 0, 1)
            for i in range(1, size):
                acc = acc * F.slice(result, a, i, i + 1)
            result = acc if keepdims else F.squeeze(acc, a)
        return result

    def _arg(self, fn: Any, axis: int | None, keepdims: bool) -> Any:
        if axis is not None:
            axis = normalize_axes(axis, self.ndim)[0]
            self._static(axis, fn.__name__)
        index = fn(as_float(self), axis, keepdim=keepdims)
        # numpy keeps every axis for axis=None with keepdims; nn.functional keeps one.
        return F.reshape(index, (1,) * self.ndim) if axis is None and keepdims else index

    def argmax(self, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Any:
        _no_out(out, "argmax")
        return self._arg(F.argmax, axis, keepdims)

    def argmin(self, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Any:
        _no_out(out, "argmin")
        return self._arg(F.argmin, axis, keepdims)

    def _nonzero(self) -> Any:
        return F.cast(self if self.dtype == np.bool_ else F.ne(as_float(self), 0.0),
                      np.float32)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        _no_out(out, "any")
        return F.gt(self._nonzero().max(axis, keepdims=keepdims), 0.5)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        _no_out(out, "all")
        return F.gt(self._nonzero().min(axis, keepdims=keepdims), 0.5)

