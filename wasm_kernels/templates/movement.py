"""The movement family: strided copies and ``where`` over a rank-4 index space.

``u8_copy`` / ``u16_copy`` / ``f32_copy`` read and write 1-, 2- or 4-byte elements through
per-axis strides, so one call writes a region of a larger tensor (pad, concat) or reads one
(slice, split); rows contiguous on both sides are one ``memory.copy``. ``u8_where`` /
``u16_where`` / ``f32_where`` / ``i64_where`` select between two strided operands of 1 to 8
bytes by a strided bool operand into a dense output.
"""

from __future__ import annotations

from collections.abc import Callable

from ..abi import BROADCAST_RANK, KernelSpec
from ..kernel_spec import ELEMENTS
from ..wasm import Code, FuncType
from .loops import strided_loop

ACCESS: dict[int, tuple[str, str, str]] = {0: ("i32", "i32.load8_u", "i32.store8"),
                                           1: ("i32", "i32.load16_u", "i32.store16"),
                                           2: ("f32", "f32.load", "f32.store"),
                                           3: ("i64", "i64.load", "i64.store")}
"""Per log2 of an element's size: the value type, load and store that move it bit for bit
(a float load and store never change the bits)."""


def _operands(spec: KernelSpec) -> dict[str, int]:
    """The operands ``spec`` reads or writes through strides, and log2 of their element size
    (a where writes a dense ``y``)."""
    log2_size = ELEMENTS[spec.dtypes[0]][1].bit_length() - 1
    if spec.op == "copy":
        return {"x": log2_size, "y": log2_size}
    return {"cond": 0, "a": log2_size, "b": log2_size}

_STRIDE_PREFIX = {"x": "xs", "y": "ys", "cond": "cs", "a": "as", "b": "bs"}


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate movement kernel ``spec`` (the same code for every ISA)."""
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    operands = _operands(spec)
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
        if spec.op == "copy":
            _copy_row(c, arg, row, i, element, operands["x"])
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
              element: Callable[[str, int], None], log2_size: int) -> None:
    """One inner row: ``memory.copy`` when both sides are contiguous, else element by
    element."""
    c.emit("local.get", arg["xs3"]).emit("i32.const", 1).emit("i32.eq")
    c.emit("local.get", arg["ys3"]).emit("i32.const", 1).emit("i32.eq").emit("i32.and")
    c.emit("if")
    c.emit("local.get", row["y"]).emit("local.get", row["x"]).emit("local.get", arg["d3"])
    if log2_size:
        c.emit("i32.const", log2_size).emit("i32.shl")
    c.emit("memory.copy")
    c.emit("else")
    _, load, store = ACCESS[log2_size]

    def body() -> None:
        element("y", i)
        element("x", i)
        c.emit(load, log2_size).emit(store, log2_size)

    strided_loop(c, i, 1, arg["d3"], body)
    c.emit("end")


def _where_row(c: Code, arg: dict[str, int], out: int, i: int,
               element: Callable[[str, int], None], log2_size: int) -> None:
    """One inner row of the dense output: ``select(a, b, cond != 0)``; elements move bit for
    bit (a float load, select and store never change the bits), so ints fit too."""
    _, load, store = ACCESS[log2_size]

    def body() -> None:
        c.emit("local.get", out)
        element("a", i)
        c.emit(load, log2_size)
        element("b", i)
        c.emit(load, log2_size)
        element("cond", i)
        c.emit("i32.load8_u", 0).emit("select").emit(store, log2_size)
        c.emit("local.get", out).emit("i32.const", 1 << log2_size).emit("i32.add")
        c.emit("local.set", out)

    strided_loop(c, i, 1, arg["d3"], body)
