"""A compartment owns one wasmtime store and its limits, and is the one place where
everything wasmtime raises is translated into our ``Trap`` taxonomy."""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import wasmtime

from wasi_intrinsics.kernel_limits import KernelFault
from wasi_intrinsics.wasi import ProcExit
from wasi_intrinsics.wasi.deadline import DeadlineExceeded
from wasm_kernels import OPT_LEVELS
from wasm_kernels.wasm import ModuleInfo, WasmFormatError, read_module

from . import host_memory
from .cache import compile_module
from .errors import ExitTrap, LimitExceeded, ModelFormatError, Trap
from .linker import Resolver, link
from .signals import guest_call

EPOCH_TICK_SECONDS = 0.01
_I64_MAX = (1 << 63) - 1  # what wasmtime's store limits take
_U64_MAX = (1 << 64) - 1  # what wasmtime's fuel takes
MAX_TIMEOUT = _I64_MAX * EPOCH_TICK_SECONDS
"""The longest ``timeout`` in seconds: its epoch ticks must fit the engine's counter."""
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]i?B?|B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "ki": 1024,
          "m": 1000**2, "mb": 1000**2, "mib": 1024**2, "mi": 1024**2,
          "g": 1000**3, "gb": 1000**3, "gib": 1024**3, "gi": 1024**3}


def parse_size(text: str | int) -> int:
    """``"64MiB"`` -> 67108864; plain integers are bytes.

    Raises:
        ValueError: ``text`` is not a size such as ``512KiB``, ``64MiB``, ``1GiB`` or ``1000000``.
        TypeError: ``text`` is neither text nor an int.
    """
    if isinstance(text, int):
        return text
    if not isinstance(text, str):
        raise TypeError(f"expected a size as text or an int, got {type(text).__name__}")
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"invalid size {text!r}; expected e.g. '64MiB', '1GiB' or a byte count")
    return int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])


TABLE_ELEMENT_BYTES = 8
"""What one table element costs against ``max_memory`` (wasmtime stores one pointer each)."""


@dataclass(frozen=True)
class ResourceLimits:
    """What one compartment may use. ``max_memory`` is in bytes, shared by every linear
    memory and table of the compartment (see ``Compartment.plan``); ``timeout`` is wall-clock
    seconds per call (epoch interruption); ``fuel`` is wasm instructions per call (roughly);
    ``None`` means no cap."""

    max_memory: int = 1 << 30
    timeout: float | None = None
    fuel: int | None = None
    max_instances: int = 16
    max_tables: int = 16
    max_table_elements: int = 1 << 20

    def __post_init__(self) -> None:
        _check_count("max_memory", self.max_memory, _I64_MAX, "bytes")
        _check_count("max_instances", self.max_instances, _I64_MAX, "instances")
        _check_count("max_tables", self.max_tables, _I64_MAX, "tables")
        _check_count("max_table_elements", self.max_table_elements, _I64_MAX, "elements")
        if self.fuel is not None:
            _check_count("fuel", self.fuel, _U64_MAX, "instructions")
        if self.timeout is not None:
            if not isinstance(self.timeout, (int, float)) or isinstance(self.timeout, bool):
                raise TypeError(f"timeout must be a number of seconds, got {self.timeout!r}")
            if not 0 < self.timeout <= MAX_TIMEOUT:  # NOTE: also false for NaN
                raise ValueError(f"timeout must be more than 0 and at most {MAX_TIMEOUT:.3g} "
                                 f"seconds, got {self.timeout!r}")


def _check_count(name: str, value: object, most: int, unit: str) -> None:
    """Raises: TypeError for a non-integer, ValueError outside ``[1, most]``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer number of {unit}, got {value!r}")
    if not 1 <= value <= most:
        raise ValueError(f"{name} must be between 1 and {most} {unit}, got {value!r}")


Features = tuple[tuple[str, bool], ...]
"""Overrides of wasmtime's ``Config.wasm_<name>`` switches, e.g. ``(("multi_memory", False),)``."""


@functools.cache
def engine(fuel: bool = False, features: Features = (), epochs: bool = False,
           opt_level: str = "speed") -> wasmtime.Engine:
    """The shared engine for a configuration; modules compiled on it are shared too.

    ``opt_level`` is cranelift's: code compiled by an engine at another level than
    ``"speed"`` is serialized and loaded into the ``"speed"`` engine of the same settings
    (``Compartment.compile``), so one store runs modules compiled at both.

    ``epochs`` turns on epoch interruption, which a wall-clock ``timeout`` needs. It is off
    otherwise because its check on every loop back-edge was measured to cost up to 2x on
    kernel loops (MiniLM: 164-173 ms without, 316-329 ms with).

    Raises:
        ValueError: a feature name is not one of wasmtime's ``Config.wasm_*`` switches.
    """
    config = wasmtime.Config()
    config.epoch_interruption = epochs
    config.consume_fuel = fuel
    config.cranelift_opt_level = opt_level
    config.wasm_relaxed_simd = True
    config.wasm_simd = True
    known = sorted(n[len("wasm_"):] for n in dir(wasmtime.Config) if n.startswith("wasm_"))
    for name, enabled in features:
        if name not in known:
            raise ValueError(f"unknown wasm feature {name!r}; available: {known}")
        setattr(config, f"wasm_{name}", enabled)
    if dict(features).get("threads", False):
        # NOTE: guard pages stay on: each store holds one module that touches the linear
        # memory (runtime.merge explains why it must be one), which the team's stores share
        # through the memory creator (runtime.host_memory).
        config.shared_memory = True
        host_memory.install(config)
    return wasmtime.Engine(config)


def _unshared(info: ModuleInfo) -> int:
    """The memories ``info`` defines that ``max_memory`` is shared among. NOTE: a shared one
    is left out: the one page of a threaded model's control memory (``runtime.threads``),
    which never grows."""
    return sum(not memory.shared for memory in info.memories)


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


def _function(frame: wasmtime.Frame) -> str:
    """``module!function`` as the modules' name sections call them."""
    return f"{frame.module_name or '?'}!{frame.func_name or f'func[{frame.func_index}]'}"


def _frames(trap: wasmtime.Trap) -> list[str]:
    return [f"{_function(frame)}+0x{frame.module_offset:x}" for frame in trap.frames]


def _trap(code: str, reason: str, trap: wasmtime.Trap) -> Trap:
    """A ``Trap`` whose message names the innermost function, e.g. ``out_of_bounds in
    wasmnn_kernels_v3!f32_gather: <wasmtime's reason>``."""
    frames = trap.frames
    where = f"{code} in {_function(frames[0])}: " if frames else ""
    return Trap(code, where + reason, _frames(trap))


def _reason(text: str) -> str:
    """A wasmtime error without its backtrace: the root cause (the last line after 'Caused
    by:'), then any intermediate causes in parentheses."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if "Caused by:" not in lines[:-1]:
        return lines[0] if lines else "unknown error"
    causes = [_NUMBERED.sub("", line) for line in lines[lines.index("Caused by:") + 1:]]
    return causes[-1] + (f" ({'; '.join(causes[:-1])})" if len(causes) > 1 else "")


@dataclass(frozen=True)
class Shares:
    """How ``max_memory`` is divided: ``memories`` memories of at most ``memory_bytes`` each
    and ``tables`` tables of at most ``table_elements`` elements each."""

    memories: int = 1
    tables: int = 0
    memory_bytes: int = 0
    table_elements: int = 0

    @classmethod
    def of(cls, limits: ResourceLimits, memories: int, tables: int,
           table_max: int | None = None) -> Shares:
        """Equal shares, so that however the guest grows them, the sum stays within the cap:
        a table gets at most an equal part (and at most ``max_table_elements``, and at most
        ``table_max`` when every table declares that maximum or less), the memories split
        the rest."""
        table_elements = min(limits.max_table_elements,
                             limits.max_memory // max(1, memories + tables) // TABLE_ELEMENT_BYTES,
                             (1 << 63) if table_max is None else table_max)
        rest = limits.max_memory - tables * table_elements * TABLE_ELEMENT_BYTES
        return cls(memories, tables, rest // max(1, memories), table_elements)

    def describe(self) -> str:
        return (f"shared by {self.memories} memory(ies) of at most {self.memory_bytes} bytes "
                f"and {self.tables} table(s) of at most {self.table_elements} elements")


def _limit_message(code: str, limits: ResourceLimits, shares: Shares) -> str:
    cap = {"memory": f"{limits.max_memory} bytes",
           "tables": f"{limits.max_tables} tables of at most {shares.table_elements} elements",
           "instances": f"{limits.max_instances} instances"}[code]
    return f"{code} limit of {cap} exceeded"


def _untyped(reason: str, frames: list[str]) -> Trap:
    """A trap wasmtime gives no trap code: an uncaught exception, or something unknown."""
    if "thrown Wasm exception" in reason:
        return Trap("exception", f"uncaught wasm exception ({reason})", frames)
    return Trap("unknown", reason, frames)


def translate(error: BaseException, limits: ResourceLimits, shares: Shares | None = None
              ) -> Exception:
    """Our exception for anything a guest call or instantiation raised: ``ExitTrap`` for
    ``proc_exit``, ``LimitExceeded`` for a time, fuel, memory, table or instance cap, ``Trap``
    with a code from ``TRAP_CODES`` for the rest, its message naming the innermost function
    (``unreachable in wasmnn_kernels_v3!f32_gather: ...``) and ``frames`` the whole
    backtrace. Other exceptions (a host function's own) are returned unchanged."""
    if isinstance(error, ProcExit):
        return ExitTrap(error.code)
    if isinstance(error, KernelFault):
        if error.code == "memory":
            return LimitExceeded("memory", str(error))
        return Trap(error.code, str(error))
    if isinstance(error, DeadlineExceeded):
        return LimitExceeded("timeout", f"time limit of {limits.timeout} s exceeded ({error})")
    if isinstance(error, wasmtime.Trap):
        code = error.trap_code
        if code == wasmtime.TrapCode.INTERRUPT:
            return LimitExceeded("timeout", f"time limit of {limits.timeout} s exceeded")
        if code == wasmtime.TrapCode.OUT_OF_FUEL:
            return LimitExceeded("fuel", f"fuel limit of {limits.fuel} exhausted")
        reason = _reason(error.message or "trap")
        if code is None:
            return _untyped(reason, _frames(error))
        return _trap(_TRAP_CODES.get(code, "unknown"), reason, error)
    if isinstance(error, wasmtime.WasmtimeError):
        reason = _reason(str(error))
        for pattern, limit in _LIMIT_ERRORS:
            if pattern.search(reason):
                shares = shares or Shares.of(limits, 1, 0)
                detail = f" ({shares.describe()})" if limit == "memory" else ""
                return LimitExceeded(limit, f"{_limit_message(limit, limits, shares)}: "
                                            f"{reason}{detail}")
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
        self.shares = Shares()
        self._created = (0, 0)  # memories and tables made so far in this store
        self._deadline: float | None = None
        self._share(1, 0)
        if self.epochs:
            _EpochTicker.ensure(self.engine)
        self._arm()

    def plan(self, modules: Sequence[ModuleInfo], host_memories: int = 0) -> None:
        """Share ``max_memory`` among every memory and table the compartment will hold: the
        ones ``modules`` define plus ``host_memories`` the host creates. Call it before
        creating any of them; then no guest can make their sum exceed the cap (wasmtime caps
        each memory and table, so each gets an equal part). ``instantiate`` plans by itself
        for a module nobody planned for."""
        tables = [t for info in modules for t in info.tables]
        maxima = [t.limits.max for t in tables]
        bounded = [m for m in maxima if m is not None]
        self._share(host_memories + sum(map(_unshared, modules)), len(tables),
                    max(bounded, default=0) if len(bounded) == len(maxima) else None)

    def _share(self, memories: int, tables: int, table_max: int | None = None) -> None:
        self.shares = Shares.of(self.limits, memories, tables, table_max)
        self.store.set_limits(memory_size=self.shares.memory_bytes,
                              instances=self.limits.max_instances,
                              tables=self.limits.max_tables,
                              table_elements=self.shares.table_elements)

    def _made(self, memories: int, tables: int) -> None:
        """Count new memories and tables, planning again when they exceed the plan."""
        self._created = (self._created[0] + memories, self._created[1] + tables)
        if self._created[0] > self.shares.memories or self._created[1] > self.shares.tables:
            self._share(max(1, self._created[0]), self._created[1])

    def memory(self, pages: int) -> wasmtime.Memory:
        """A new host memory of ``pages`` 64 KiB pages, counted against ``max_memory``.

        Raises:
            LimitExceeded: ``pages`` is over this memory's share of ``max_memory``.
        """
        self._made(1, 0)
        return self.call(wasmtime.Memory, self.store,
                         wasmtime.MemoryType(wasmtime.Limits(pages, None)))

    def deadline(self) -> float | None:
        """When the running call's time is up (``time.monotonic()`` seconds), if it is limited:
        WASI calls that block wake then."""
        return self._deadline

    def _arm(self) -> None:
        if self.limits.timeout is not None:
            self._deadline = time.monotonic() + self.limits.timeout
            self.store.set_epoch_deadline(
                max(1, round(self.limits.timeout / EPOCH_TICK_SECONDS)))
        if self.limits.fuel is not None:
            self.store.set_fuel(self.limits.fuel)

    def compile(self, wasm: bytes, opt_level: str = "speed"
                ) -> tuple[wasmtime.Module, ModuleInfo]:
        """Compile ``wasm`` at cranelift's ``opt_level`` (cached per engine) and read its
        interface.

        Raises:
            ModelFormatError: the bytes are not a valid WebAssembly module.
            ValueError: ``opt_level`` is not one of ``wasm_kernels.OPT_LEVELS``.
        """
        if opt_level not in OPT_LEVELS:
            raise ValueError(f"unknown opt level {opt_level!r}; available: {list(OPT_LEVELS)}")
        fuel = self.limits.fuel is not None
        compiler = None if opt_level == "speed" else engine(fuel, self.features, self.epochs,
                                                             opt_level)
        try:
            info = read_module(wasm)
            key = f"fuel={fuel}|epochs={self.epochs}|opt={opt_level}" + (
                f"|features={self.features}" if self.features else "")
            module = compile_module(self.engine, wasm, key, compiler)
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
        self._made(_unshared(info), len(info.tables))
        return self.call(wasmtime.Instance, self.store, module, result.externs)

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` (a guest call) under this compartment's limits, translating traps."""
        self._arm()
        try:
            with guest_call():
                return fn(*args)
        except (ProcExit, DeadlineExceeded, KernelFault, wasmtime.Trap,
                wasmtime.WasmtimeError) as err:
            raise translate(err, self.limits, self.shares) from None
