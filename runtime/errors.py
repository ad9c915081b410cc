"""The runtime's exceptions. Users never need to import wasmtime to catch what we raise."""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` with every control character escaped (a newline as ``\\n``, ESC as
    ``\\x1b``), so what a guest or a file says prints as one line and cannot drive the
    terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class WasmnnError(Exception):
    """Base class of every error the runtime raises on purpose."""


class ModelFormatError(WasmnnError):
    """The bytes are not a usable model: not wasm, truncated, or with missing or lying metadata."""


class LinkError(WasmnnError):
    """One or more imports could not be resolved; ``problems`` lists every one of them."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(f"{len(problems)} import(s) could not be linked: "
                         + "; ".join(problems))


class Trap(WasmnnError):
    """The guest stopped abnormally. ``code`` is one of ``TRAP_CODES``; ``frames`` is the
    guest backtrace as readable strings, innermost first."""

    def __init__(self, code: str, message: str, frames: list[str] | None = None):
        self.code = code
        self.frames = frames or []
        super().__init__(message)


class ExitTrap(Trap):
    """The guest called ``proc_exit``; ``exit_code`` is what it passed."""

    def __init__(self, exit_code: int):
        self.exit_code = exit_code
        super().__init__("exit", f"the program exited with code {exit_code}")


class LimitExceeded(Trap):
    """A compartment limit was hit: ``code`` is ``timeout``, ``fuel``, ``memory``, ``tables``
    or ``instances``."""


TRAP_CODES = ("out_of_bounds", "unreachable", "stack_overflow", "division", "conversion",
              "indirect_call", "exception", "timeout", "fuel", "memory", "tables", "instances",
              "exit", "rejected", "unknown")
"""Every ``Trap.code``; the CLI maps them to exit codes from one table."""
