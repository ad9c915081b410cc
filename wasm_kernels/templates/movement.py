"""The movement family: strided copies and ``where`` over a rank-4 index space.

``f32_copy`` reads and writes through per-axis strides, so one call writes a region of a
larger tensor (pad, concat) or reads one (slice, split); rows contiguous on both sides are
one ``memory.copy``. ``f32_where`` / ``i64_where`` select between two strided operands of
4 / 8 bytes by a strided bool operand into a dense output.
"""

from __future__ import annotations

from collections.abc import Callable

from ..abi import BROADCAST_RANK, KernelSpec
from ..wasm import Code, FuncType
from .loops import strided_loop

OPERANDS: dict[str, dict[str, int]] = {
    "f32_copy": {"x": 2, "y": 2},
    "f32_where": {"cond": 0, "a": 2, "b": 2},
    "i64_where": {"cond": 0, "a": 3, "b": 3},
}
"""Per kernel: the operands read or written through strides, and log2 of their element
size (``f32_where`` writes a dense ``y``)."""

_STRIDE_PREFIX = {"x": "xs", "y": "ys", "cond": "cs", "a": "as", "b": "bs"}


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate movement kernel ``spec`` (the same code for every ISA)."""
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    operands = OPERANDS[spec.name]
    last = BROADCAST_RANK - 1
    index = [c.local("i32") for _ in range(BROADCAST_RANK)]
    row = {name: c.local("i32") for name in operands}
    out = c.local("i32")
    c.emit("local.get", arg["y"]).emit("local.set", out)

    def element(name: str, i: int) -> None:
        """Push the address of operand ``name`` at inner index ``i``."""
        c.emit("local.get", row[name]).emit("local.get", i)
        c.emit("local.get", arg[f"{_STRIDE_PREFIX[name]}{last}"]).emit("i32.mul")
        if operands[name]:
            c.emit("i32.const", operands[name]).emit("i32.shl")
        c.emit("i32.add")

    def inner() -> None:
        for name, log2_size in operands.items():
            c.emit("local.get", arg[name])
            for depth in range(last):
                c.emit("local.get", index[depth])
                c.emit("local.get", arg[f"{_STRIDE_PREFIX[name]}{depth}"]).emit("i32.mul")
                if log2_size:
                    c.emit("i32.const", log2_size).emit("i32.shl")
                c.emit("i32.add")
            c.emit("local.set", row[name])
        i = index[last]
        c.emit("i32.const", 0).emit("local.set", i)
        if spec.name == "f32_copy":
            _copy_row(c, arg, row, i, element)
        else:
            _where_row(c, arg, out, i, element, operands["a"])

    def nest(depth: int) -> None:
        if depth == last:
            inner()
            return
        c.emit("i32.const", 0).emit("local.set", index[depth])
        strided_loop(c, index[depth], 1, arg[f"d{depth}"], lambda: nest(depth + 1))

    nest(0)
    return FuncType(spec.param_types, spec.results), c


def _copy_row(c: Code, arg: dict[str, int], row: dict[str, int], i: int,
              element: Callable[[str, int], None]) -> None:
    """One inner row: ``memory.copy`` when both sides are contiguous, else float by float."""
    c.emit("local.get", arg["xs3"]).emit("i32.const", 1).emit("i32.eq")
    c.emit("local.get", arg["ys3"]).emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    c.emit("if")
    c.emit("local.get", row["y"]).emit("local.get", row["x"]).emit("local.get", arg["d3"])
    c.emit("i32.const", 2).emit("i32.shl").emit("memory.copy")
    c.emit("else")

    def body() -> None:
        element("y", i)
        element("x", i)
        c.emit("f32.load", 2).emit("f32.store", 2)

    strided_loop(c, i, 1, arg["d3"], body)
    c.emit("end")


def _where_row(c: Code, arg: dict[str, int], out: int, i: int,
               element: Callable[[str, int], None], log2_size: int) -> None:
    """One inner row of the dense output: ``select(a, b, cond != 0)``; elements move bit for
    bit (a float load, select and store never change the bits), so ints fit too."""
    value = "f32" if log2_size == 2 else "i64"

    def body() -> None:
        c.emit("local.get", out)
        element("a", i)
        c.emit(f"{value}.load", log2_size)
        element("b", i)
        c.emit(f"{value}.load", log2_size)
        element("cond", i)
        c.emit("i32.load8_u", 0).emit("select").emit(f"{value}.store", log2_size)
        c.emit("local.get", out).emit("i32.const", 1 << log2_size).emit("i32.add")
        c.emit("local.set", out)

    strided_loop(c, i, 1, arg["d3"], body)
