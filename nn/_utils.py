"""Argument normalisation shared by ``nn.functional`` and the layers (torch's ``_pair``),
and ``Module``'s helpers: name checks, removal from its stores, and its repr."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def pair(value: Any) -> tuple[Any, Any]:
    """``value`` as a 2-tuple: an int ``n`` becomes ``(n, n)``, a sequence is checked.

    Raises:
        ValueError: a sequence whose length is not 2.
    """
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"expected an int or a pair, got {value!r}")
        return (value[0], value[1])
    return (value, value)


def triple(value: Any) -> tuple[Any, Any, Any]:
    """``value`` as a 3-tuple (torch's ``_triple``): an int ``n`` becomes ``(n, n, n)``.

    Raises:
        ValueError: a sequence whose length is not 3.
    """
    if isinstance(value, (list, tuple)):
        if len(value) != 3:
            raise ValueError(f"expected an int or a triple, got {value!r}")
        return (value[0], value[1], value[2])
    return (value, value, value)


def typename(value: Any) -> str:
    module = type(value).__module__
    name = type(value).__qualname__
    return name if module == "builtins" else f"{module}.{name}"


def check_name(kind: str, name: Any, owner: object, store: dict[str, Any]) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\", got: {name}")
    if name == "":
        raise KeyError(f"{kind} name can't be empty string \"\"")
    if hasattr(owner, name) and name not in store:
        raise KeyError(f"attribute '{name}' already exists")


def join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def discard(name: str, *stores: dict[str, Any] | set[str]) -> None:
    """Remove ``name`` from each of ``stores`` that holds it."""
    for store in stores:
        if name in store:
            if isinstance(store, set):
                store.discard(name)
            else:
                del store[name]


def render(name: str, extra: str, children: Mapping[str, Any]) -> str:
    """A module's repr as torch prints it: ``name(extra)``, or its extra lines and
    ``(child): repr`` lines indented inside the parentheses."""
    extra_lines = extra.split("\n") if extra else []
    child_lines = [f"({key}): " + repr(child).replace("\n", "\n  ")
                   for key, child in children.items()]
    lines = extra_lines + child_lines
    main = name + "("
    if lines:
        if len(extra_lines) == 1 and not child_lines:
            main += extra_lines[0]
        else:
            main += "\n  " + "\n  ".join(lines) + "\n"
    return main + ")"
