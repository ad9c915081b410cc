"""A small compute-definition layer: elementwise math written once as an expression DAG,
emitted as wasm for any ISA (in the spirit of TVM's ``te.compute``).

    x = Expr.input(0)
    y = (x * 0.5).max(0.0)
    emit(c, ISAS["relaxed"], y, {0: x_local})

Float values are ``f`` (an f32x4 or f32), integer values ``i`` (an i32x4 or i32, the same
bits), masks ``m`` (an all-ones lane mask, or an i32 0/1 for scalar). A node used more than
once is computed once into a local. Both sides of ``select`` are always evaluated.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Union

from ..wasm import Code
from .isa import Isa

Operand = Union["Expr", float]


@dataclass(frozen=True, eq=False)
class Expr:
    """One node: ``op`` applied to ``args``; ``value`` for constants, inputs and shifts."""

    op: str
    args: tuple[Expr, ...] = ()
    kind: str = "f"
    value: float | int | None = None

    @staticmethod
    def input(index: int) -> Expr:
        """The float held in the caller's local number ``index`` of the ``inputs`` map."""
        return Expr("input", value=index)

    @staticmethod
    def const(value: float) -> Expr:
        return Expr("const", value=float(value))

    @staticmethod
    def iconst(value: int) -> Expr:
        return Expr("iconst", kind="i", value=int(value))

    def _binary(self, op: str, other: Operand, kind: str = "f") -> Expr:
        other_expr = other if isinstance(other, Expr) else Expr.const(other)
        return Expr(op, (self, other_expr), kind)

    def __add__(self, o: Operand) -> Expr: return self._binary("add", o)
    def __radd__(self, o: Operand) -> Expr: return Expr.const(o)._binary("add", self)  # type: ignore[arg-type]
    def __sub__(self, o: Operand) -> Expr: return self._binary("sub", o)
    def __rsub__(self, o: Operand) -> Expr: return Expr.const(o)._binary("sub", self)  # type: ignore[arg-type]
    def __mul__(self, o: Operand) -> Expr: return self._binary("mul", o)
    def __rmul__(self, o: Operand) -> Expr: return Expr.const(o)._binary("mul", self)  # type: ignore[arg-type]
    def __truediv__(self, o: Operand) -> Expr: return self._binary("div", o)
    def __rtruediv__(self, o: Operand) -> Expr: return Expr.const(o)._binary("div", self)  # type: ignore[arg-type]
    def __neg__(self) -> Expr: return Expr("neg", (self,))
    def __lt__(self, o: Operand) -> Expr: return self._binary("lt", o, "m")
    def __gt__(self, o: Operand) -> Expr: return self._binary("gt", o, "m")

    def min(self, o: Operand) -> Expr: return self._binary("min", o)
    def max(self, o: Operand) -> Expr: return self._binary("max", o)

    def abs(self) -> Expr: return Expr("abs", (self,))
    def sqrt(self) -> Expr: return Expr("sqrt", (self,))
    def nearest(self) -> Expr: return Expr("nearest", (self,))
    def floor(self) -> Expr: return Expr("floor", (self,))
    def ceil(self) -> Expr: return Expr("ceil", (self,))
    def eq(self, o: Operand) -> Expr: return self._binary("eq", o, "m")
    def ne(self, o: Operand) -> Expr: return self._binary("ne", o, "m")

    def clamp_below(self, bound: float) -> Expr:
        """``max(self, bound)`` for a constant ``bound`` other than NaN; a NaN passes
        through. One instruction (``f32x4.pmax``), where ``max``, with wasm's NaN and -0
        rules, takes eight on x86. With ``bound`` +-0, a zero input keeps its own sign
        (``max(-0, +0)`` is +0)."""
        return self._binary("pmax", bound)

    def clamp_above(self, bound: float) -> Expr:
        """``min(self, bound)`` for a constant ``bound`` other than NaN; a NaN passes
        through. With ``bound`` +-0, a zero input keeps its own sign."""
        return self._binary("pmin", bound)

    def madd(self, factor: Operand, addend: Operand) -> Expr:
        """``self * factor + addend``: one fused multiply-add where the ISA has FMA, else a
        multiply and an add."""
        return Expr("madd", (self, as_expr(factor), as_expr(addend)))

    def bits(self) -> Expr:
        """The float's bits as an integer (no conversion)."""
        return Expr("bits", (self,), "i")

    def to_int(self) -> Expr:
        """Truncate toward zero to an integer, saturating; NaN gives 0."""
        return Expr("to_int", (self,), "i")


def as_expr(value: Operand) -> Expr:
    """``value`` itself, or a constant node for a float."""
    return value if isinstance(value, Expr) else Expr.const(value)


def ibinary(op: str, a: Expr, b: Expr | int) -> Expr:
    """Integer ``add``, ``sub``, ``and``, ``or`` or ``xor`` of ``a`` and ``b``."""
    return Expr(f"i{op}", (a, b if isinstance(b, Expr) else Expr.iconst(b)), "i")


def shift(op: str, a: Expr, count: int) -> Expr:
    """Integer ``shl`` or ``shr_s`` of ``a`` by a constant ``count``."""
    return Expr(op, (a,), "i", count)


def from_bits(a: Expr) -> Expr:
    """The float whose bits are the integer ``a``."""
    return Expr("from_bits", (a,))


def to_float(a: Expr) -> Expr:
    """The signed integer ``a`` converted to float."""
    return Expr("to_float", (a,))


def select(mask: Expr, a: Operand, b: Operand) -> Expr:
    """``a`` where ``mask`` is set, else ``b`` (lane by lane)."""
    return Expr("select", (mask, as_expr(a), as_expr(b)), as_expr(a).kind)


def copysign(magnitude: Expr, sign: Expr) -> Expr:
    """``|magnitude|`` with the sign bit of ``sign``."""
    return Expr("copysign", (magnitude, sign))


# Text-format instruction per (op, vector?); "{f}" and "{i}" stand for f32x4/f32, i32x4/i32.
_SIMPLE = {
    "add": "{f}.add", "sub": "{f}.sub", "mul": "{f}.mul", "div": "{f}.div",
    "min": "{f}.min", "max": "{f}.max", "neg": "{f}.neg", "abs": "{f}.abs",
    "sqrt": "{f}.sqrt", "nearest": "{f}.nearest", "floor": "{f}.floor", "ceil": "{f}.ceil",
    "lt": "{f}.lt", "gt": "{f}.gt",
    "eq": "{f}.eq", "ne": "{f}.ne", "iadd": "{i}.add", "isub": "{i}.sub",
}
_VECTOR = {"iand": "v128.and", "ior": "v128.or", "ixor": "v128.xor",
           "to_int": "i32x4.trunc_sat_f32x4_s", "to_float": "f32x4.convert_i32x4_s",
           "bits": None, "from_bits": None}
_SCALAR = {"iand": "i32.and", "ior": "i32.or", "ixor": "i32.xor", "to_int": "i32.trunc_sat_f32_s",
           "to_float": "f32.convert_i32_s", "bits": "i32.reinterpret_f32",
           "from_bits": "f32.reinterpret_i32"}


def emit(c: Code, isa: Isa, root: Expr, inputs: dict[int, int]) -> None:
    """Push the value of ``root``; ``inputs`` maps each ``Expr.input`` index to a local."""
    uses: dict[int, int] = {}

    def count(node: Expr) -> None:
        uses[id(node)] = uses.get(id(node), 0) + 1
        if uses[id(node)] == 1:
            for arg in node.args:
                count(arg)

    count(root)
    saved: dict[int, int] = {}
    names = {"f": isa.prefix, "i": "i32x4" if isa.vector else "i32"}

    def local_type(node: Expr) -> str:
        if isa.vector:
            return "v128"
        return "f32" if node.kind == "f" else "i32"

    def visit(node: Expr) -> None:
        if id(node) in saved:
            c.emit("local.get", saved[id(node)])
            return
        _emit_node(c, isa, node, names, inputs, visit)
        if uses[id(node)] > 1 and node.op not in ("input", "const", "iconst"):
            saved[id(node)] = c.local(local_type(node))
            c.emit("local.tee", saved[id(node)])

    visit(root)


def _emit_node(c: Code, isa: Isa, node: Expr, names: dict[str, str], inputs: dict[int, int],
               visit: Callable[[Expr], None]) -> None:
    op = node.op
    if op == "input":
        c.emit("local.get", inputs[int(node.value)])  # type: ignore[arg-type]
    elif op == "const":
        isa.const(c, float(node.value))  # type: ignore[arg-type]
    elif op == "iconst":
        if isa.vector:
            c.emit("v128.const", struct.pack("<i", int(node.value)) * 4)  # type: ignore[arg-type]
        else:
            c.emit("i32.const", int(node.value))  # type: ignore[arg-type]
    elif op == "select":
        mask, a, b = node.args
        visit(a)
        visit(b)
        visit(mask)
        c.emit("v128.bitselect" if isa.vector else "select")
    elif op == "copysign":
        magnitude, sign = node.args
        if isa.vector:
            # The sign bit from ``sign``, every other bit from |magnitude|.
            visit(sign)
            visit(magnitude)
            c.emit("f32x4.abs")
            c.emit("v128.const", struct.pack("<I", 0x80000000) * 4).emit("v128.bitselect")
        else:
            visit(magnitude)
            visit(sign)
            c.emit("f32.copysign")
    elif op == "madd":
        for arg in node.args[:2]:
            visit(arg)
        if isa.fma:
            visit(node.args[2])
            c.emit("f32x4.relaxed_madd")
        else:
            c.emit(f"{names['f']}.mul")
            visit(node.args[2])
            c.emit(f"{names['f']}.add")
    elif op in ("pmin", "pmax"):
        for arg in node.args:
            visit(arg)
        # NOTE: for a bound other than NaN and +-0, min/max and pmin/pmax agree everywhere.
        c.emit(f"f32x4.{op}" if isa.vector else f"f32.{op[1:]}")
    elif op in ("shl", "shr_s"):
        visit(node.args[0])
        c.emit("i32.const", int(node.value))  # type: ignore[arg-type]
        c.emit(f"{names['i']}.{op}")
    else:
        for arg in node.args:
            visit(arg)
        if op in _SIMPLE:
            c.emit(_SIMPLE[op].format(f=names["f"], i=names["i"]))
        else:
            instr = (_VECTOR if isa.vector else _SCALAR)[op]
            if instr is not None:
                c.emit(instr)

