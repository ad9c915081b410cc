"""The comparison family: y = a <op> b (any element dtype) as numpy bool bytes, with
numpy broadcasting over a rank-4 output, one element at a time for every ISA (comparisons
build masks, which are small and computed once per run, never in a hot loop).

``scalar_broadcast`` is that loop for any one-instruction elementwise op; the integer
family uses it too."""

from __future__ import annotations

from collections.abc import Callable

from ..abi import BROADCAST_RANK, KernelSpec
from ..wasm import Code, FuncType
from .cast import ACCESS
from .loops import strided_loop

LOADS: dict[str, tuple[str, str, int]] = {
    dtype: (value, load, log2_size) for dtype, (value, load, _, log2_size) in ACCESS.items()}
"""Per operand dtype: the wasm value type, its load and log2 of the element size (a narrow
integer or bool byte loads sign- or zero-extended into an i32, so i32 compares it)."""


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate comparison kernel ``spec`` (``<t>_cmp_<op>``); the same code for every ISA."""
    value = LOADS[spec.dtypes[0]][0]
    signed = "" if value == "f32" or spec.op in ("eq", "ne") else "_s"
    return scalar_broadcast(spec, f"{value}.{spec.op}{signed}", ("i32.store8", 0))


def scalar_broadcast(spec: KernelSpec, instruction: str | Callable[[Code], None],
                     store: tuple[str, int]) -> tuple[FuncType, Code]:
    """``y = instruction(a, b)`` over the dense rank-4 output, one element at a time: the
    operands (of ``spec.dtypes[0]``) read through their strides, each result stored by
    ``store`` (the instruction and log2 of the result's size). ``instruction`` may be a
    function emitting code that turns ``a, b`` on the stack into the result."""
    _, load, log2_size = LOADS[spec.dtypes[0]]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    index = [c.local("i32") for _ in range(BROADCAST_RANK)]
    out = c.local("i32")
    c.emit("local.get", arg["y"]).emit("local.set", out)

    def element(t: str) -> None:
        """Push the element ``t[sum(index[k] * ts<k>)]``."""
        c.emit("local.get", arg[t])
        for depth in range(BROADCAST_RANK):
            c.emit("local.get", index[depth]).emit("local.get", arg[f"{t}s{depth}"])
            c.emit("i32.mul").emit("i32.const", log2_size).emit("i32.shl").emit("i32.add")
        c.emit(load, log2_size)

    def body() -> None:
        c.emit("local.get", out)
        element("a")
        element("b")
        if callable(instruction):
            instruction(c)
        else:
            c.emit(instruction)
        c.emit(*store)
        c.emit("local.get", out).emit("i32.const", 1 << store[1]).emit("i32.add")
        c.emit("local.set", out)

    def loop(depth: int) -> None:
        c.emit("i32.const", 0).emit("local.set", index[depth])
        inner = body if depth == BROADCAST_RANK - 1 else (lambda: loop(depth + 1))
        strided_loop(c, index[depth], 1, arg[f"d{depth}"], inner)

    loop(0)
    return FuncType(spec.param_types, spec.results), c
