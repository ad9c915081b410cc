"""The WebAssembly text format of a module, printed from instruction lists and the opcode
table, so that ``wat2wasm`` turns it back into the same bytes (name and other custom
sections aside: names show as ``$ids`` and comments, other custom sections as comments).
"""

from __future__ import annotations

import math
import re
import struct

from .disassemble import Function, Instruction, Module, disassemble
from .opcodes import BLOCK, F32, F64, I32, I64, LANE, MEMARG, OPCODES, U32, V128
from .types import FuncType, GlobalType, Limits, MemoryType

INDENT = "  "
READABLE_BYTES = 1 << 16
"""Longer strings (weights) print every byte as an escape, which is fast; shorter ones
(messages) show their printable characters as themselves."""
_ID = re.compile(r"^[0-9A-Za-z!#$%&'*+\-./:<=>?@\\^_`|~]+$")


def _float(value: float, kind: str) -> str:
    """Exact text for a float immediate: hexadecimal, or ``nan:0x...`` with its payload."""
    if math.isnan(value):
        bits, mantissa = ((struct.unpack("<I", struct.pack("<f", value))[0], 23) if kind == F32
                          else (struct.unpack("<Q", struct.pack("<d", value))[0], 52))
        sign = "-" if bits >> (31 if kind == F32 else 63) else ""
        return f"{sign}nan:0x{bits & ((1 << mantissa) - 1):x}"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    return float(value).hex()


def _immediates(op: str, args: tuple, comment: str | None) -> str:
    kind = OPCODES[op].immediate
    if kind == MEMARG:
        align, offset, memory = (tuple(args) + (0, 0, 0))[:3]
        return ((f" {memory}" if memory else "") + (f" offset={offset}" if offset else "")
                + f" align={1 << align}")
    if kind == I32:
        value = args[0] - (1 << 32) if args[0] >= 1 << 31 else args[0]
        return f" {value}"
    if kind == I64:
        return f" {args[0]}"
    if kind in (F32, F64):
        return f" {_float(args[0], kind)}"
    if kind == V128:
        raw = bytes(args[0])
        if op == "i8x16.shuffle":
            return " " + " ".join(str(b) for b in raw)
        return " i32x4 " + " ".join(f"0x{w:08x}" for w in struct.unpack("<4I", raw))
    if kind in (U32, LANE):
        return f" {args[0]}" + (f" (;{comment};)" if comment else "")
    if kind == BLOCK and args and args[0] is not None:
        return f" (result {args[0]})"
    return ""


def instructions_text(instructions: list[Instruction], depth: int = 2,
                      local_names: dict[int, str] | None = None,
                      function_names: dict[int, str] | None = None) -> list[str]:
    """One line per instruction, indented by block depth; local and called functions'
    names, when known, as comments."""
    lines = []
    for op, args in instructions:
        if op in ("else", "end"):
            depth -= 1
        comment = None
        if op.startswith("local.") and local_names:
            comment = local_names.get(args[0])
        elif op == "call" and function_names:
            comment = function_names.get(args[0])
        lines.append(INDENT * depth + op + _immediates(op, args, comment))
        if op in ("block", "loop", "if", "else"):
            depth += 1
    return lines


def _signature(ty: FuncType) -> str:
    return ((f" (param {' '.join(ty.params)})" if ty.params else "")
            + (f" (result {' '.join(ty.results)})" if ty.results else ""))


def _limits(limits: Limits) -> str:
    return f"{limits.min}" + (f" {limits.max}" if limits.max is not None else "")


def _string(data: bytes) -> str:
    if len(data) > READABLE_BYTES:
        return "\\" + data.hex("\\")
    return "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02x}"
                   for b in data)


def _const(expression: list[Instruction]) -> str:
    return " ".join(f"({op}{_immediates(op, args, None)})" for op, args in expression)


class _Printer:
    def __init__(self, module: Module):
        self.m = module
        names = list(module.function_names.values())
        self.ids = {i: f" ${n}" for i, n in module.function_names.items()
                    if _ID.match(n) and names.count(n) == 1}

    def imports(self) -> list[str]:
        lines, funcs = [], 0
        for where, name, ty in self.m.imports:
            if isinstance(ty, int):
                desc = f"(func{self.ids.get(funcs, '')} (;{funcs};) (type {ty}))"
                funcs += 1
            elif isinstance(ty, MemoryType):
                desc = f"(memory {_limits(ty.limits)}{' shared' if ty.shared else ''})"
            else:
                desc = f"(global {self._global_type(ty)})"
            lines.append(f'{INDENT}(import "{_string(where.encode())}" '
                         f'"{_string(name.encode())}" {desc})')
        return lines

    @staticmethod
    def _global_type(ty: GlobalType) -> str:
        return f"(mut {ty.content})" if ty.mutable else ty.content

    def function(self, number: int, function: Function) -> list[str]:
        index = self.m.imported_functions + number
        ty = self.m.types[function.type_index]
        head = (f"{INDENT}(func{self.ids.get(index, '')} (;{index};) "
                f"(type {function.type_index}){_signature(ty)}")
        lines = [head]
        if function.locals:
            lines.append(f"{INDENT * 2}(local {' '.join(function.locals)})")
        lines += instructions_text(function.instructions, 2, self.m.local_names.get(index),
                                   self.m.function_names)
        lines[-1] += ")"
        return lines

    def text(self) -> str:
        m = self.m
        head = "(module" + (f" ${m.name}" if m.name and _ID.match(m.name) else "")
        lines = [head]
        lines += [f"{INDENT};; custom section {name!r}: {len(data)} bytes"
                  for name, data in m.customs]
        lines += [f"{INDENT}(type (;{i};) (func{_signature(t)}))" for i, t in enumerate(m.types)]
        lines += self.imports()
        for number, function in enumerate(m.functions):
            lines += self.function(number, function)
        lines += [f"{INDENT}(memory (;{i};) {_limits(t.limits)}{' shared' if t.shared else ''})"
                  for i, t in enumerate(m.memories)]
        lines += [f"{INDENT}(global (;{i};) {self._global_type(t)} {_const(init)})"
                  for i, (t, init) in enumerate(m.globals)]
        lines += [f'{INDENT}(export "{_string(name.encode())}" ({kind} {index}))'
                  for name, kind, index in m.exports]
        if m.start is not None:
            lines.append(f"{INDENT}(start {m.start})")
        lines += [f'{INDENT}(data (;{i};) {_const(offset)} "{_string(data)}")'
                  for i, (offset, data) in enumerate(m.data)]
        return "\n".join(lines) + ")\n"


def module_text(data: bytes) -> str:
    """The text format of the module ``data``.

    Raises:
        WasmFormatError: the bytes are malformed or use what the printer does not show.
    """
    return _Printer(disassemble(data)).text()
