"""Where a model can run: the numpy interpreter and every kernel provider of the runtime.

``PROVIDERS`` is the one declaration of the kernel providers the tests run on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import nn
import wasm_kernels

PROVIDERS: tuple[str, ...] = (*wasm_kernels.ISA_NAMES, "host")
"""Kernel providers: the wasm kernel module for each ISA, and the host (numpy) provider."""

EXECUTORS: tuple[str, ...] = ("interpreter", *PROVIDERS)
"""The numpy graph interpreter (``modelc.interpret``) and every kernel provider."""


class Lambda(nn.Module):
    """A module whose forward is ``fn``: a row of the case table as a model to trace."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)
