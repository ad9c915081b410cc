"""The primitive protocol that lets a tracer see every ``nn.functional`` primitive call.

A *primitive* is a function in ``nn.functional`` decorated with ``@primitive``: its body is
the eager numpy semantics, the reference for everything the compiler and kernels do. When
any argument (or an element of a list/tuple argument) defines ``__nn_function__``, the call
is handed to that argument's class instead, as ``__nn_function__(name, signature, bound)``.
Composite ops are written only in primitives, so a tracer records their primitives and
needs nothing else (the same contract as ``__torch_function__`` and tinygrad's mixins).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def _tracer_of(value: Any) -> Any:
    if hasattr(type(value), "__nn_function__"):
        return type(value)
    if isinstance(value, (list, tuple)):
        for item in value:
            if hasattr(type(item), "__nn_function__"):
                return type(item)
    return None


def primitive(fn: F) -> F:
    """Mark ``fn`` as a primitive op whose body is its numpy reference semantics."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            tracer = _tracer_of(value)
            if tracer is not None:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                return tracer.__nn_function__(fn.__name__, signature, bound.arguments)
        return fn(*args, **kwargs)

    dispatch.__nn_primitive__ = fn  # type: ignore[attr-defined]
    return dispatch  # type: ignore[return-value]


def is_primitive(fn: Any) -> bool:
    return hasattr(fn, "__nn_primitive__")
