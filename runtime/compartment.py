"""A compartment owns one wasmtime store and its limits, and is the one place where
everything wasmtime raises is translated into our ``Trap`` taxonomy."""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

import wasmtime

from wasi_intrinsics.wasi import ProcExit
from wasm_kernels.wasm import ModuleInfo, WasmFormatError, read_module

from .cache import compile_module
from .errors import ExitTrap, LimitExceeded, ModelFormatError, Trap
from .linker import Resolver, link

EPOCH_TICK_SECONDS = 0.01
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]i?B?|B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "ki": 1024,
          "m": 1000**2, "mb": 1000**2, "mib": 1024**2, "mi": 1024**2,
          "g": 1000**3, "gb": 1000**3, "gib": 1024**3, "gi": 1024**3}


def parse_size(text: str | int) -> int:
    """``"64MiB"`` -> 67108864; plain integers are bytes.

    Raises:
        ValueError: ``text`` is not a size such as ``512KiB``, ``64MiB``, ``1GiB`` or ``1000000``.
    """
    if isinstance(text, int):
        return text
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"invalid size {text!r}; expected e.g. '64MiB', '1GiB' or a byte count")
    return int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])


@dataclass(frozen=True)
class ResourceLimits:
    """What one compartment may use. ``timeout`` is wall-clock seconds per call (epoch
    interruption); ``fuel`` is wasm instructions per call (roughly); ``None`` means no cap."""

    max_memory: int = 1 << 30
    timeout: float | None = None
    fuel: int | None = None
    max_instances: int = 16
    max_tables: int = 16
    max_table_elements: int = 1 << 20

    def __post_init__(self) -> None:
        if self.max_memory <= 0:
            raise ValueError(f"max_memory must be positive, got {self.max_memory!r}")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"timeout must be positive seconds, got {self.timeout!r}")
        if self.fuel is not None and self.fuel <= 0:
            raise ValueError(f"fuel must be a positive count, got {self.fuel!r}")


Features = tuple[tuple[str, bool], ...]
"""Overrides of wasmtime's ``Config.wasm_<name>`` switches, e.g. ``(("multi_memory", False),)``."""


@functools.cache
def engine(fuel: bool = False, features: Features = (), epochs: bool = False
           ) -> wasmtime.Engine:
    """The shared engine for a configuration; modules compiled on it are shared too.

    ``epochs`` turns on epoch interruption, which a wall-clock ``timeout`` needs. It is off
    otherwise because its check on every loop back-edge was measured to cost up to 2x on
    kernel loops (MiniLM: 164-173 ms without, 316-329 ms with).

    Raises:
        ValueError: a feature name is not one of wasmtime's ``Config.wasm_*`` switches.
    """
    config = wasmtime.Config()
    config.epoch_interruption = epochs
    config.consume_fuel = fuel
    config.wasm_relaxed_simd = True
    config.wasm_simd = True
    known = sorted(n[len("wasm_"):] for n in dir(wasmtime.Config) if n.startswith("wasm_"))
    for name, enabled in features:
        if name not in known:
            raise ValueError(f"unknown wasm feature {name!r}; available: {known}")
        setattr(config, f"wasm_{name}", enabled)
    return wasmtime.Engine(config)


class _EpochTicker:
    """One daemon thread per engine advancing its epoch every ``EPOCH_TICK_SECONDS``."""

    _started: ClassVar[set[int]] = set()
    _lock = threading.Lock()

    @classmethod
    def ensure(cls, eng: wasmtime.Engine) -> None:
        with cls._lock:
            if id(eng) in cls._started:
                return
            cls._started.add(id(eng))
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(EPOCH_TICK_SECONDS):
                eng.increment_epoch()

        threading.Thread(target=tick, name="wasmnn-epoch", daemon=True).start()


_TRAP_CODES = {
    wasmtime.TrapCode.STACK_OVERFLOW: "stack_overflow",
    wasmtime.TrapCode.MEMORY_OUT_OF_BOUNDS: "out_of_bounds",
    wasmtime.TrapCode.HEAP_MISALIGNED: "out_of_bounds",
    wasmtime.TrapCode.TABLE_OUT_OF_BOUNDS: "out_of_bounds",
    wasmtime.TrapCode.INDIRECT_CALL_TO_NULL: "indirect_call",
    wasmtime.TrapCode.BAD_SIGNATURE: "indirect_call",
    wasmtime.TrapCode.INTEGER_OVERFLOW: "division",
    wasmtime.TrapCode.INTEGER_DIVISION_BY_ZERO: "division",
    wasmtime.TrapCode.BAD_CONVERSION_TO_INTEGER: "conversion",
    wasmtime.TrapCode.UNREACHABLE: "unreachable",
}


_NUMBERED = re.compile(r"^\d+: ")
# What wasmtime says when a store limit refuses an instantiation -> our LimitExceeded code.
_LIMIT_ERRORS = ((re.compile(r"memory minimum size .* exceeds memory limits|memory count"),
                  "memory"),
                 (re.compile(r"table minimum size .* exceeds table limits|table count"),
                  "tables"),
                 (re.compile(r"instance count"), "instances"))


def _frames(trap: wasmtime.Trap) -> list[str]:
    return [f"{frame.module_name or '?'}!{frame.func_name or f'func[{frame.func_index}]'}"
            f"+0x{frame.module_offset:x}" for frame in trap.frames]


def _reason(text: str) -> str:
    """A wasmtime error without its backtrace: the root cause (the last line after 'Caused
    by:'), then any intermediate causes in parentheses."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if "Caused by:" not in lines[:-1]:
        return lines[0] if lines else "unknown error"
    causes = [_NUMBERED.sub("", line) for line in lines[lines.index("Caused by:") + 1:]]
    return causes[-1] + (f" ({'; '.join(causes[:-1])})" if len(causes) > 1 else "")


def _limit_message(code: str, limits: ResourceLimits) -> str:
    cap = {"memory": f"{limits.max_memory} bytes", "tables": f"{limits.max_tables} tables of "
           f"at most {limits.max_table_elements} elements",
           "instances": f"{limits.max_instances} instances"}[code]
    return f"{code} limit of {cap} exceeded"


def _untyped(reason: str, frames: list[str]) -> Trap:
    """A trap wasmtime gives no trap code: an uncaught exception, or something unknown."""
    if "thrown Wasm exception" in reason:
        return Trap("exception", f"uncaught wasm exception ({reason})", frames)
    return Trap("unknown", reason, frames)


def translate(error: BaseException, limits: ResourceLimits) -> Exception:
    """Our exception for anything a guest call or instantiation raised: ``ExitTrap`` for
    ``proc_exit``, ``LimitExceeded`` for a time, fuel, memory, table or instance cap, ``Trap``
    with a code from ``TRAP_CODES`` for the rest. Other exceptions (a host function's own)
    are returned unchanged."""
    if isinstance(error, ProcExit):
        return ExitTrap(error.code)
    if isinstance(error, wasmtime.Trap):
        code = error.trap_code
        if code == wasmtime.TrapCode.INTERRUPT:
            return LimitExceeded("timeout", f"time limit of {limits.timeout} s exceeded")
        if code == wasmtime.TrapCode.OUT_OF_FUEL:
            return LimitExceeded("fuel", f"fuel limit of {limits.fuel} exhausted")
        reason = _reason(error.message or "trap")
        if code is None:
            return _untyped(reason, _frames(error))
        return Trap(_TRAP_CODES.get(code, "unknown"), reason, _frames(error))
    if isinstance(error, wasmtime.WasmtimeError):
        reason = _reason(str(error))
        for pattern, limit in _LIMIT_ERRORS:
            if pattern.search(reason):
                return LimitExceeded(limit, f"{_limit_message(limit, limits)}: {reason}")
        return _untyped(reason, [])
    return error if isinstance(error, Exception) else RuntimeError(str(error))


class Compartment:
    """One store with its limits: instantiate modules into it and call their exports."""

    def __init__(self, limits: ResourceLimits | None = None, features: Features = ()):
        """Args:
            features: wasm feature switches that differ from wasmtime's defaults (the spec
                test runner turns off proposals newer than the suite it runs).

        Raises:
            ValueError: an unknown feature name.
        """
        self.limits = limits or ResourceLimits()
        self.features = features
        self.epochs = self.limits.timeout is not None
        self.engine = engine(fuel=self.limits.fuel is not None, features=features,
                             epochs=self.epochs)
        self.store = wasmtime.Store(self.engine)
        self.store.set_limits(memory_size=self.limits.max_memory,
                              instances=self.limits.max_instances,
                              tables=self.limits.max_tables,
                              table_elements=self.limits.max_table_elements)
        if self.epochs:
            _EpochTicker.ensure(self.engine)
        self._arm()

    def _arm(self) -> None:
        if self.limits.timeout is not None:
            self.store.set_epoch_deadline(
                max(1, round(self.limits.timeout / EPOCH_TICK_SECONDS)))
        if self.limits.fuel is not None:
            self.store.set_fuel(self.limits.fuel)

    def compile(self, wasm: bytes) -> tuple[wasmtime.Module, ModuleInfo]:
        """Compile ``wasm`` (cached per engine) and read its interface.

        Raises:
            ModelFormatError: the bytes are not a valid WebAssembly module.
        """
        try:
            info = read_module(wasm)
            key = f"fuel={self.limits.fuel is not None}|epochs={self.epochs}" + (
                f"|features={self.features}" if self.features else "")
            module = compile_module(self.engine, wasm, key)
        except WasmFormatError as err:
            raise ModelFormatError(f"malformed WebAssembly: {err}") from None
        except wasmtime.WasmtimeError as err:
            raise ModelFormatError(f"invalid WebAssembly: {_reason(str(err))}") from None
        return module, info

    def instantiate(self, module: wasmtime.Module, info: ModuleInfo,
                    resolver: Resolver) -> wasmtime.Instance:
        """Link every import through ``resolver`` and instantiate (running any start function).

        Raises:
            LinkError: listing every unresolved or mistyped import.
            Trap: the start function trapped, or a limit was hit.
        """
        result = link(info, resolver, self.store)
        result.raise_if_failed()
        return self.call(wasmtime.Instance, self.store, module, result.externs)

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` (a guest call) under this compartment's limits, translating traps."""
        self._arm()
        try:
            return fn(*args)
        except (ProcExit, wasmtime.Trap, wasmtime.WasmtimeError) as err:
            raise translate(err, self.limits) from None
