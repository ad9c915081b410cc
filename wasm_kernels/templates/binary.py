"""The elementwise binary family with numpy broadcasting over a rank-4 output.

The three outer dimensions are plain loops; the inner one runs one register at a time when
both operands are contiguous or one is broadcast along it (stride 0, read once and
splatted), and one float at a time with arbitrary strides otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from ..abi import BROADCAST_RANK, KernelSpec
from ..wasm import Code, FuncType
from . import activations, expr
from .expr import Expr
from .isa import ISAS, Isa
from .loops import strided_loop
from .rows import row_map, splat_scalar

BinaryFn = Callable[[Expr, Expr], Expr]


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate binary kernel ``spec`` (its ``formula`` in ``a`` and ``b``) for ``isa_name``."""
    fn = activations.binary(spec.formula)
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    last = BROADCAST_RANK - 1
    # Pointers to the current inner row of a, b and y.
    rows = {t: c.local("i32") for t in "aby"}
    index = [c.local("i32") for _ in range(last)]
    c.emit("local.get", arg["y"]).emit("local.set", rows["y"])

    def row_pointers() -> None:
        for t in "ab":
            c.emit("local.get", arg[t])
            for depth in range(last):
                c.emit("local.get", index[depth]).emit("local.get", arg[f"{t}s{depth}"])
                c.emit("i32.mul").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.emit("local.set", rows[t])

    def leaf(depth: int) -> None:
        if depth == last:
            row_pointers()
            _inner(c, isa, fn, arg, rows)
            c.emit("local.get", rows["y"]).emit("local.get", arg[f"d{last}"])
            c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("local.set", rows["y"])
            return
        c.emit("i32.const", 0).emit("local.set", index[depth])
        strided_loop(c, index[depth], 1, arg[f"d{depth}"], lambda: leaf(depth + 1))

    leaf(0)
    return FuncType(spec.param_types, spec.results), c


def _inner(c: Code, isa: Isa, fn: BinaryFn, arg: dict[str, int], rows: dict[str, int]) -> None:
    """One inner row of d3 outputs, choosing the loop by the operands' inner strides."""
    n, sa, sb = arg["d3"], arg["as3"], arg["bs3"]
    def binary(e: list[Expr]) -> Expr:
        return fn(e[0], e[1])

    c.emit("local.get", sa).emit("i32.const", 1).emit("i32.eq")
    c.emit("local.get", sb).emit("i32.const", 1).emit("i32.eq").emit("i32.and").emit("if")
    row_map(c, isa, [rows["a"], rows["b"]], rows["y"], n, binary)
    c.emit("else")
    c.emit("local.get", sa).emit("i32.eqz").emit("local.get", sb).emit("i32.const", 1)
    c.emit("i32.eq").emit("i32.and").emit("if")
    c.emit("local.get", rows["a"]).emit("f32.load", 2)
    row_map(c, isa, [rows["b"]], rows["y"], n, lambda e: fn(e[1], e[0]),
            {1: splat_scalar(c, isa)})
    c.emit("else")
    c.emit("local.get", sa).emit("i32.const", 1).emit("i32.eq").emit("local.get", sb)
    c.emit("i32.eqz").emit("i32.and").emit("if")
    c.emit("local.get", rows["b"]).emit("f32.load", 2)
    row_map(c, isa, [rows["a"]], rows["y"], n, binary, {1: splat_scalar(c, isa)})
    c.emit("else")
    _strided(c, fn, arg, rows)
    c.emit("end").emit("end").emit("end")


def _strided(c: Code, fn: BinaryFn, arg: dict[str, int], rows: dict[str, int]) -> None:
    """The general inner row: y[i] = fn(a[i * as3], b[i * bs3]), one float at a time."""
    scalar = ISAS["scalar"]
    i, a, b = c.local("i32"), c.local("f32"), c.local("f32")
    c.emit("i32.const", 0).emit("local.set", i)

    def body() -> None:
        for t, local in (("a", a), ("b", b)):
            c.emit("local.get", rows[t]).emit("local.get", i).emit("local.get", arg[f"{t}s3"])
            c.emit("i32.mul").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.emit("f32.load", 2).emit("local.set", local)
        c.emit("local.get", rows["y"]).emit("local.get", i).emit("i32.const", 2).emit("i32.shl")
        c.emit("i32.add")
        expr.emit(c, scalar, fn(Expr.input(0), Expr.input(1)), {0: a, 1: b})
        c.emit("f32.store", 2)

    strided_loop(c, i, 1, arg["d3"], body)
