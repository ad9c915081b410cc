"""Runs WebAssembly spec test scripts (``.wast``) through *our* linker and compartments.

wabt's ``wast2json`` turns a script into a JSON command list plus one ``.wasm`` per module;
``WastRunner`` interprets the commands. Every module lives in one ``Compartment`` and links
through one ``RegistryResolver``: ``register`` puts an instance's exports there, the
``spectest`` module is an ``IntrinsicModule`` registered before the first command, and
``assert_unlinkable`` passes only when our own ``link`` report finds a problem.

Functions are called with every value as its bits (``raw_call``), so NaN payloads and ``v128``
lanes compare exactly; a ``v128`` global is never read (wasmtime-py aborts the process on
such types): that command counts as skipped.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import wasmtime

from wasi_intrinsics import HostContext, IntrinsicModule
from wasm_kernels.wasm import FuncType, GlobalType, Limits, MemoryType, TableType

from .compartment import Compartment, Features, ResourceLimits
from .errors import LinkError, ModelFormatError, Trap
from .linker import RegistryResolver, Resolved, instance_exports, link, uses_v128
from .raw_call import WIDTHS, call_bits, numeric

SCRIPT_LIMITS = ResourceLimits(max_memory=1 << 32, timeout=30.0, max_instances=100_000,
                       max_tables=100_000, max_table_elements=10_000_000)
"""Generous enough for every official script; the timeout only guards against hangs."""
SPEC_FEATURES = (("gc", False), ("function_references", False), ("multi_memory", False),
                 ("memory64", False))
"""The suite wabt 1.0.32 vendors is WebAssembly 2.0: it asserts that a constant expression
may not read a module's own globals (allowed since GC), that two memories are invalid, and
that a memarg field longer than a 5-byte LEB128 is malformed (memory64 reads them as u64)."""

_BITS = {"i32": 32, "i64": 64}


@dataclass(frozen=True)
class _Float:
    """How a float type's bit pattern is packed, and its NaN bits (sign excluded)."""

    float_format: str
    int_format: str
    canonical_nan: int  # all exponent bits and the quiet bit
    quiet_bit: int
    sign_bit: int


_FLOATS = {"f32": _Float("<f", "<I", 0x7FC00000, 1 << 22, 1 << 31),
           "f64": _Float("<d", "<Q", 0x7FF8 << 48, 1 << 51, 1 << 63)}


def spectest() -> IntrinsicModule:
    """The ``spectest`` module every official script imports from."""
    module = IntrinsicModule("spectest")
    prints = {"print": (), "print_i32": ("i32",), "print_i64": ("i64",), "print_f32": ("f32",),
              "print_f64": ("f64",), "print_i32_f32": ("i32", "f32"),
              "print_f64_f64": ("f64", "f64")}
    for name, params in prints.items():
        module.define_function(name, FuncType(params, ()), _ignore)
    for content, value in (("i32", 666), ("i64", 666), ("f32", 666.6), ("f64", 666.6)):
        module.define_global(f"global_{content}", GlobalType(content, False), value)
    module.define_table("table", TableType("funcref", Limits(10, 20)))
    module.define_memory("memory", MemoryType(Limits(1, 2)))
    return module


def _ignore(ctx: HostContext, *args: Any) -> None:
    """The spectest print functions: the scripts only need them to exist."""


@dataclass(frozen=True)
class HostRef:
    """The host reference ``ref.extern N`` of a script."""

    index: int


@dataclass(frozen=True)
class Outcome:
    """What one command did: ``status`` is ``passed``, ``failed`` or ``skipped``."""

    line: int
    command: str
    status: str
    detail: str = ""


@dataclass
class WastReport:
    """The outcomes of one script, in order."""

    script: str
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    def summary(self) -> str:
        return summary(self.count("passed"), self.count("failed"), self.count("skipped"))


def summary(passed: int, failed: int, skipped: int) -> str:
    """``N passed, M failed``, plus the skipped count when there is one."""
    return f"{passed} passed, {failed} failed" + (f" ({skipped} skipped)" if skipped else "")


class _Failed(Exception):
    """The command did not do what the script asserts."""


class _Skipped(Exception):
    """The command cannot be run safely here (v128 through wasmtime-py)."""


def _argument(value: dict[str, Any]) -> Any:
    kind, text = value["type"], value.get("value", "")
    if kind in _BITS:
        bits = int(text)
        return bits - (1 << _BITS[kind]) if bits >> (_BITS[kind] - 1) else bits
    if kind in _FLOATS:
        ty = _FLOATS[kind]
        return struct.unpack(ty.float_format, struct.pack(ty.int_format, int(text)))[0]
    if kind in ("funcref", "externref"):
        return None if text == "null" else HostRef(int(text))
    raise _Skipped(f"cannot pass a {kind} argument")


_LANES = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "f32": 32, "f64": 64}


def _bits(value: dict[str, Any]) -> int:
    """A numeric or ``v128`` argument as its unsigned bit pattern (``call_bits``)."""
    if value["type"] == "v128":
        width = _LANES[value["lane_type"]]
        return sum(int(lane) << (width * i) for i, lane in enumerate(value["value"]))
    if value["type"] in WIDTHS:
        return int(value["value"])
    raise _Skipped(f"cannot pass a {value['type']} argument as bits")


def _float_matches(kind: str, text: str, bits: int) -> bool:
    ty = _FLOATS[kind]
    exponent = ty.canonical_nan & ~ty.quiet_bit  # all ones in a NaN
    if text == "nan:canonical":
        return bits & ~ty.sign_bit == ty.canonical_nan
    if text == "nan:arithmetic":
        return bits & exponent == exponent and bool(bits & ty.quiet_bit)
    return bits == int(text)


def _as_bits(kind: str, got: Any) -> Any:
    """A result from wasmtime-py as its bit pattern (numbers), or unchanged (references)."""
    if kind in _BITS and isinstance(got, int):
        return got & ((1 << _BITS[kind]) - 1)
    if kind in _FLOATS and isinstance(got, float):
        ty = _FLOATS[kind]
        return struct.unpack(ty.int_format, struct.pack(ty.float_format, got))[0]
    return got


def _matches(expected: dict[str, Any], got: Any) -> bool:
    """Whether result ``got`` (a bit pattern for numbers and ``v128``) is what the script
    expects."""
    kind, text = expected["type"], expected.get("value", "")
    if kind in _BITS:
        return got == int(text)
    if kind in _FLOATS:
        return isinstance(got, int) and _float_matches(kind, text, got)
    if kind == "v128":
        lane_type = expected["lane_type"]
        width = _LANES[lane_type]
        lanes = [(got >> (width * i)) & ((1 << width) - 1) for i in range(128 // width)]
        return all(_float_matches(lane_type, want, lane) if lane_type in _FLOATS
                   else lane == int(want) for want, lane in zip(text, lanes))
    if kind == "externref":
        return got is None if text == "null" else got == HostRef(int(text))
    if kind == "funcref":
        return (got is None) == (text == "null")
    raise _Skipped(f"cannot compare a {kind} result")


def _describe(values: list[Any]) -> str:
    return "(" + ", ".join(repr(v) for v in values) + ")"


class WastRunner:
    """Interprets one converted script's commands in a fresh compartment and registry."""

    def __init__(self, directory: Path, limits: ResourceLimits = SCRIPT_LIMITS,
                 features: Features = SPEC_FEATURES):
        self.directory = directory
        self.compartment = Compartment(limits, features)
        self.registry = RegistryResolver()
        self.registry.register("spectest", spectest().instantiate(self.compartment.store))
        self.named: dict[str, dict[str, Resolved]] = {}
        self.current: dict[str, Resolved] | None = None
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "module": self._module, "register": self._register, "action": self._action,
            "assert_return": self._assert_return, "assert_trap": self._assert_trap,
            "assert_exhaustion": self._assert_exhaustion,
            "assert_invalid": self._assert_rejected, "assert_malformed": self._assert_rejected,
            "assert_unlinkable": self._assert_unlinkable,
            "assert_uninstantiable": self._assert_uninstantiable,
        }

    def run(self, script: str, commands: list[dict[str, Any]]) -> WastReport:
        """Run every command; a failing command is recorded and the script goes on."""
        report = WastReport(script)
        for command in commands:
            kind, line = command["type"], command.get("line", 0)
            handler = self._handlers.get(kind)
            try:
                if handler is None:
                    raise _Skipped(f"command {kind!r} is not supported")
                handler(command)
            except _Skipped as skip:
                report.outcomes.append(Outcome(line, kind, "skipped", str(skip)))
            except _Failed as failure:
                report.outcomes.append(Outcome(line, kind, "failed", str(failure)))
            except Exception as error:  # noqa: BLE001 - an unexpected error fails one command
                report.outcomes.append(Outcome(line, kind, "failed",
                                               f"{type(error).__name__}: {error}"))
            else:
                report.outcomes.append(Outcome(line, kind, "passed"))
        return report

    def _compile(self, command: dict[str, Any]) -> tuple[wasmtime.Module, Any]:
        return self.compartment.compile((self.directory / command["filename"]).read_bytes())

    def _exports(self, name: str | None) -> dict[str, Resolved]:
        exports = self.current if name is None else self.named.get(name)
        if exports is None:
            raise _Failed(f"no module {name or '(current)'} is defined; defined: "
                          f"{sorted(self.named)}")
        return exports

    def _module(self, command: dict[str, Any]) -> None:
        self.current = None
        module, info = self._compile(command)
        instance = self.compartment.instantiate(module, info, self.registry)
        self.current = instance_exports(self.compartment.store, instance, info)
        if "name" in command:
            self.named[command["name"]] = self.current

    def _register(self, command: dict[str, Any]) -> None:
        self.registry.register(command["as"], self._exports(command.get("name")))

    def _perform(self, action: dict[str, Any]) -> list[Any]:
        """Invoke a function or read a global; the results as a list."""
        exports = self._exports(action.get("module"))
        found = exports.get(action["field"])
        if found is None:
            raise _Failed(f"no export {action['field']!r}; exports: {sorted(exports)}")
        store = self.compartment.store
        if action["type"] == "invoke" and isinstance(found.type, FuncType) and numeric(found.type):
            args = [_bits(a) for a in action.get("args", [])]
            return list(self.compartment.call(call_bits, store, found.extern, found.type, args))
        if uses_v128(found.type):
            raise _Skipped(f"{action['field']!r} has a v128 type ({found.type}), which "
                           "wasmtime-py cannot call or read without aborting")
        if action["type"] == "get":
            value = found.extern.value(store)
            value = value.value if isinstance(value, wasmtime.Val) else value
            return [_as_bits(getattr(found.type, "content", ""), value)]
        args = [_argument(a) for a in action.get("args", [])]
        results = self.compartment.call(found.extern, store, *args)
        # NOTE: count by the binary's signature: wasmtime-py returns None both for "no
        # results" and for one null reference.
        if not isinstance(found.type, FuncType):
            raise _Failed(f"{action['field']!r} is a {type(found.type).__name__}, not a function")
        count = len(found.type.results)
        values = list(results) if count > 1 else [results] if count == 1 else []
        return [_as_bits(kind, value) for kind, value in zip(found.type.results, values)]

    def _action(self, command: dict[str, Any]) -> None:
        self._perform(command["action"])

    def _assert_return(self, command: dict[str, Any]) -> None:
        got = self._perform(command["action"])
        expected = command["expected"]
        if len(got) != len(expected) or not all(map(_matches, expected, got)):
            raise _Failed(f"{command['action']['field']!r} returned {_describe(got)}, "
                          f"expected {_describe([e.get('value') for e in expected])}")

    def _expect_trap(self, command: dict[str, Any], codes: tuple[str, ...] | None) -> None:
        try:
            got = self._perform(command["action"])
        except Trap as trap:
            if codes is None or trap.code in codes:
                return
            raise _Failed(f"trapped with {trap.code} ({trap}), expected "
                          f"{command.get('text')!r}") from None
        raise _Failed(f"returned {_describe(got)}, expected a trap: {command.get('text')!r}")

    def _assert_trap(self, command: dict[str, Any]) -> None:
        self._expect_trap(command, None)

    def _assert_exhaustion(self, command: dict[str, Any]) -> None:
        self._expect_trap(command, ("stack_overflow",))

    def _assert_rejected(self, command: dict[str, Any]) -> None:
        """assert_invalid / assert_malformed: the module must not compile (text modules must
        not even parse)."""
        data = (self.directory / command["filename"]).read_bytes()
        try:
            wasm = (bytes(wasmtime.wat2wasm(data.decode())) if command["module_type"] == "text"
                    else data)
            self.compartment.compile(wasm)
        except (ModelFormatError, wasmtime.WasmtimeError, UnicodeDecodeError):
            return
        raise _Failed(f"the module was accepted, expected it rejected: {command['text']!r}")

    def _assert_unlinkable(self, command: dict[str, Any]) -> None:
        _, info = self._compile(command)
        if link(info, self.registry, self.compartment.store).ok:
            raise _Failed(f"our linker accepted the module, expected {command['text']!r}")

    def _assert_uninstantiable(self, command: dict[str, Any]) -> None:
        module, info = self._compile(command)
        try:
            self.compartment.instantiate(module, info, self.registry)
        except LinkError as error:
            raise _Failed(f"did not link ({error}), expected a trap during "
                          f"instantiation: {command['text']!r}") from None
        except Trap:
            return
        raise _Failed(f"instantiated, expected {command['text']!r}")


def run_script(path: Path, limits: ResourceLimits = SCRIPT_LIMITS) -> WastReport:
    """Convert ``path`` (a ``.wast``, or a ``wast2json`` ``.json``) and run it.

    Raises:
        FileNotFoundError: ``path`` does not exist, or ``wast2json`` (wabt) is not installed.
        ModelFormatError: ``wast2json`` could not convert the script.
    """
    if not path.exists():
        raise FileNotFoundError(f"no such script: {str(path)!r}")
    if path.suffix == ".json":
        commands = json.loads(path.read_text())["commands"]
        return WastRunner(path.parent, limits).run(path.name, commands)
    tool = shutil.which("wast2json")
    if tool is None:
        raise FileNotFoundError("wast2json not found; install wabt (e.g. apt install wabt)")
    with tempfile.TemporaryDirectory(prefix="wasmnn-wast-") as scratch:
        target = Path(scratch) / f"{path.stem}.json"
        done = subprocess.run([tool, str(path), "-o", str(target)], capture_output=True,
                              check=False)
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip()
            first = (said.splitlines() or ["no message"])[0]
            raise ModelFormatError(f"wast2json could not convert {path.name}: {first}")
        commands = json.loads(target.read_text())["commands"]
        return WastRunner(Path(scratch), limits).run(path.name, commands)
