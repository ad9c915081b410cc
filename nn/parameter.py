"""``Parameter``: an ndarray a ``Module`` registers as a parameter when assigned to it."""

from __future__ import annotations

from typing import Any

import numpy as np


def _plain(value: Any) -> Any:
    """``value`` with every Parameter (also inside lists and tuples) viewed as an ndarray."""
    if isinstance(value, Parameter):
        return value.view(np.ndarray)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(item) for item in value)
    return value


class Parameter(np.ndarray):
    """An ndarray that a ``Module`` registers as a parameter when assigned as an attribute.

    Results of numpy functions and ufuncs on a Parameter are plain ndarrays, as results of
    torch ops on a Parameter are plain tensors, so an activation is never mistaken for a
    parameter. In-place ufuncs (``p += 1``) keep the Parameter.

    >>> p = Parameter(np.zeros(2, np.float32))
    >>> type(p + 1).__name__, type(p).__name__
    ('ndarray', 'Parameter')
    """

    def __new__(cls, data: Any = None) -> Parameter:
        if data is None:
            data = np.empty(0, dtype=np.float32)
        return np.asarray(data).view(cls)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = _plain(out)
        result = getattr(ufunc, method)(*_plain(inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return result

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return func(*_plain(args), **{key: _plain(value) for key, value in kwargs.items()})

    def __repr__(self) -> str:
        return f"Parameter containing:\n{self.view(np.ndarray)!r}"
