"""The compiler's exceptions."""

from __future__ import annotations


class CompileError(Exception):
    """The graph cannot be compiled as it is; the message names the node and the user's line."""


class TraceError(CompileError):
    """Tracing failed: data-dependent control flow, or an argument the tracer cannot record."""


class UnsupportedOpError(CompileError):
    """An op has no definition in ``modelc/ops``."""
