"""The reduce family: y(outer, inner) = sum / mean / max of x(outer, n, inner) over n.

When ``inner == 1`` (a reduction over the last axes) each row is folded one register at a
time and the lanes are combined at the end; otherwise registers run across ``inner`` and
accumulate down ``n``, then a scalar tail covers ``inner % lanes``.
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .isa import ISAS, Isa
from .loops import strided_loop
from .rows import row_fold, with_tail

COMBINE = {"sum": "add", "mean": "add", "max": "max"}


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate reduce kernel ``spec`` (``f32_reduce_<op>``) for ``isa_name``."""
    op = spec.op
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    x, y, outer, n, inner = range(5)
    scale, column_bytes = c.local("f32"), c.local("i32")
    c.emit("f32.const", 1.0).emit("local.get", n).emit("f32.convert_i32_u").emit("f32.div")
    c.emit("local.set", scale)
    c.emit("local.get", inner).emit("i32.const", 2).emit("i32.shl")
    c.emit("local.set", column_bytes)
    c.emit("block").emit("loop")
    c.emit("local.get", outer).emit("i32.eqz").emit("br_if", 1)
    c.emit("local.get", inner).emit("i32.const", 1).emit("i32.eq").emit("if")
    c.emit("local.get", y)
    row_fold(c, isa, [x], n, COMBINE[op], lambda e: e[0])
    if op == "mean":
        c.emit("local.get", scale).emit("f32.mul")
    c.emit("f32.store", 2)
    c.emit("else")
    _columns(c, isa, op, x, y, n, inner, column_bytes, scale)
    c.emit("end")
    # x += n * inner floats; y += inner floats; outer -= 1
    c.emit("local.get", x).emit("local.get", n).emit("local.get", column_bytes).emit("i32.mul")
    c.emit("i32.add").emit("local.set", x)
    c.emit("local.get", y).emit("local.get", column_bytes).emit("i32.add").emit("local.set", y)
    c.emit("local.get", outer).emit("i32.const", 1).emit("i32.sub").emit("local.set", outer)
    c.emit("br", 0).emit("end").emit("end")
    return FuncType(spec.param_types, spec.results), c


def _columns(c: Code, isa: Isa, op: str, x: int, y: int, n: int, inner: int,
             column_bytes: int, scale: int) -> None:
    """y[j] = fold over t of x[t * inner + j], registers across j, then a scalar tail."""
    j, t, pointer = c.local("i32"), c.local("i32"), c.local("i32")
    c.emit("i32.const", 0).emit("local.set", j)
    for each in with_tail(isa):
        acc = c.local(each.valtype)

        def column(each: Isa = each, acc: int = acc) -> None:
            # pointer = x + 4j; acc = x[j]; then n - 1 more rows down the column
            c.emit("local.get", x).emit("local.get", j).emit("i32.const", 2).emit("i32.shl")
            c.emit("i32.add").emit("local.tee", pointer)
            each.load(c)
            c.emit("local.set", acc)
            c.emit("i32.const", 1).emit("local.set", t)

            def down() -> None:
                c.emit("local.get", pointer).emit("local.get", column_bytes).emit("i32.add")
                c.emit("local.tee", pointer)
                each.load(c)
                c.emit("local.get", acc)
                each.op(c, COMBINE[op])
                c.emit("local.set", acc)

            strided_loop(c, t, 1, n, down)
            c.emit("local.get", y).emit("local.get", j).emit("i32.const", 2).emit("i32.shl")
            c.emit("i32.add").emit("local.get", acc)
            if op == "mean":
                c.emit("local.get", scale)
                each.splat(c)
                each.op(c, "mul")
            each.store(c)

        strided_loop(c, j, each.lanes, inner, column)
