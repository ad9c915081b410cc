"""Instruction-set variants as data: how a template loads, stores and multiply-adds a
register of ``lanes`` floats. ``relaxed`` and ``simd128`` hold an f32x4; ``scalar`` holds
one f32 and is the reference every SIMD variant is tested and benchmarked against.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from ..wasm import Code
from .loops import strided_loop


@dataclass(frozen=True)
class Isa:
    """One instruction-set variant of the kernel templates."""

    name: str
    lanes: int
    fma: bool
    """Multiply-add with ``f32x4.relaxed_madd`` (one rounding on FMA hardware)."""

    @property
    def vector(self) -> bool:
        return self.lanes > 1

    @property
    def valtype(self) -> str:
        return "v128" if self.vector else "f32"

    @property
    def prefix(self) -> str:
        """The text-format prefix of arithmetic on this register: ``f32x4`` or ``f32``."""
        return "f32x4" if self.vector else "f32"

    def load(self, c: Code, offset: int = 0) -> None:
        """Replace the address on the stack by the register stored there."""
        c.emit("v128.load" if self.vector else "f32.load", 2, offset)

    def store(self, c: Code, offset: int = 0) -> None:
        """Store the register on top of the stack at the address below it."""
        c.emit("v128.store" if self.vector else "f32.store", 2, offset)

    def load_splat(self, c: Code, offset: int = 0) -> None:
        """Replace the address on the stack by one float loaded there, in every lane.

        NOTE: ``f32.load`` + ``f32x4.splat`` becomes one ``vbroadcastss`` from memory in
        cranelift, while ``v128.load32_splat`` goes through a general register.
        """
        c.emit("f32.load", 2, offset)
        self.splat(c)

    def splat(self, c: Code) -> None:
        """Broadcast the f32 on top of the stack to every lane."""
        if self.vector:
            c.emit("f32x4.splat")

    def const(self, c: Code, value: float) -> None:
        """Push ``value`` in every lane."""
        if self.vector:
            c.emit("v128.const", struct.pack("<f", value) * 4)
        else:
            c.emit("f32.const", value)

    def op(self, c: Code, name: str) -> None:
        """Emit arithmetic ``name`` (``add``, ``mul``, ``max``...) on this register type."""
        c.emit(f"{self.prefix}.{name}")

    def madd_into(self, c: Code, acc: int) -> None:
        """``acc += a * b`` for ``a, b`` on the stack."""
        if self.fma:
            c.emit("local.get", acc).emit("f32x4.relaxed_madd")
        else:
            self.op(c, "mul")
            c.emit("local.get", acc)
            self.op(c, "add")
        c.emit("local.set", acc)


ISAS: dict[str, Isa] = {
    "relaxed": Isa("relaxed", 4, fma=True),
    "simd128": Isa("simd128", 4, fma=False),
    "scalar": Isa("scalar", 1, fma=False),
}


@dataclass
class KernelFrame:
    """What every generated kernel function carries: its code, ISA, the locals of its
    arguments by parameter name, and its fused epilogue. Templates subclass it with the
    locals their loops share."""

    c: Code
    isa: Isa
    arg: dict[str, int]
    epilogue: tuple[str, ...]


@dataclass
class NamedFrame(KernelFrame):
    """A kernel frame whose locals have names: ``v`` maps each name to its local, and these
    helpers address locals and arguments alike by name."""

    v: dict[str, int]

    def get(self, *names: str) -> Code:
        """Push each named local or argument."""
        return self.c.get(*(self.v[name] if name in self.v else self.arg[name]
                            for name in names))

    def set(self, name: str) -> None:
        self.c.emit("local.set", self.v[name])

    def add(self, name: str, *amount: str | int) -> None:
        """``name += product of amount`` (locals, arguments or int constants)."""
        self.get(name)
        for k, term in enumerate(amount):
            if isinstance(term, int):
                self.c.emit("i32.const", term)
            else:
                self.get(term)
            if k:
                self.c.emit("i32.mul")
        self.c.emit("i32.add")
        self.set(name)

    def count(self, name: str, limit: str, step: int, body: Callable[[], None]) -> None:
        """``for name in range(0, limit, step)`` (full steps only)."""
        self.c.emit("i32.const", 0)
        self.set(name)
        strided_loop(self.c, self.v[name], step, self.v[limit] if limit in self.v
                     else self.arg[limit], body)
