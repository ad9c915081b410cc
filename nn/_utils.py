"""Argument normalisation shared by ``nn.functional`` and the layers (torch's ``_pair``)."""

from __future__ import annotations

from typing import Any


def pair(value: Any) -> tuple[Any, Any]:
    """``value`` as a 2-tuple: an int ``n`` becomes ``(n, n)``, a sequence is checked.

    Raises:
        ValueError: a sequence whose length is not 2.
    """
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"expected an int or a pair, got {value!r}")
        return tuple(value)  # type: ignore[return-value]
    return (value, value)
