"""The gemm family: C(m, n) = epilogue(A(m, k) @ B(k, n) [+ bias]).

Columns are processed ``LANES`` at a time with one f32x4 accumulator per column block
(``simd128``: mul + add; ``relaxed``: ``f32x4.relaxed_madd``), then a scalar tail handles
``n % 4`` columns. The ``scalar`` ISA runs only the tail loop and is the reference variant.
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .loops import counted_loop

LANES = 4


def emit(spec: KernelSpec, isa: str) -> tuple[FuncType, Code]:
    """Generate the body of gemm kernel ``spec`` for ``isa`` ('relaxed', 'simd128', 'scalar')."""
    has_bias = "bias" in spec.params
    relu = spec.name.endswith("_relu")
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    i, j, p, pa, pb, arow, crow, row_bytes = (c.local("i32") for _ in range(8))

    c.emit("local.get", arg["n"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", row_bytes)

    def row_body() -> None:
        # arow = a + i * k * 4; crow = c + i * n * 4
        c.emit("local.get", arg["a"]).emit("local.get", i).emit("local.get", arg["k"])
        c.emit("i32.mul").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        c.emit("local.set", arow)
        c.emit("local.get", arg["c"]).emit("local.get", i).emit("local.get", row_bytes)
        c.emit("i32.mul").emit("i32.add").emit("local.set", crow)
        c.emit("i32.const", 0).emit("local.set", j)
        if isa != "scalar":
            _column_blocks(c, isa, arg, has_bias, relu, j, p, pa, pb, arow, crow, row_bytes)
        _column_blocks(c, "scalar", arg, has_bias, relu, j, p, pa, pb, arow, crow, row_bytes)

    counted_loop(c, i, lambda: c.emit("local.get", arg["m"]), row_body)
    return FuncType(spec.param_types, spec.results), c


def _column_blocks(c: Code, isa: str, arg: dict[str, int], has_bias: bool, relu: bool,
                   j: int, p: int, pa: int, pb: int, arow: int, crow: int,
                   row_bytes: int) -> None:
    """Columns from ``j`` on, ``LANES`` at a time for SIMD ISAs, one at a time for scalar."""
    vector = isa != "scalar"
    width = LANES if vector else 1
    kind = "v128" if vector else "f32"
    load = "v128.load" if vector else "f32.load"
    acc = c.local(kind)

    c.emit("block").emit("loop")
    # while j + width <= n
    c.emit("local.get", j).emit("i32.const", width).emit("i32.add")
    c.emit("local.get", arg["n"]).emit("i32.gt_u").emit("br_if", 1)
    if has_bias:
        c.emit("local.get", arg["bias"]).emit("local.get", j).emit("i32.const", 2)
        c.emit("i32.shl").emit("i32.add").emit(load, 2).emit("local.set", acc)
    elif vector:
        c.emit("v128.const", bytes(16)).emit("local.set", acc)
    else:
        c.emit("f32.const", 0.0).emit("local.set", acc)
    c.emit("local.get", arow).emit("local.set", pa)
    c.emit("local.get", arg["b"]).emit("local.get", j).emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add").emit("local.set", pb)

    def inner() -> None:
        c.emit("local.get", pa).emit("f32.load", 2)
        if vector:
            c.emit("f32x4.splat")
        c.emit("local.get", pb).emit(load, 2)
        if isa == "relaxed":
            c.emit("local.get", acc).emit("f32x4.relaxed_madd")
        else:
            c.emit("f32x4.mul" if vector else "f32.mul").emit("local.get", acc)
            c.emit("f32x4.add" if vector else "f32.add")
        c.emit("local.set", acc)
        c.emit("local.get", pa).emit("i32.const", 4).emit("i32.add").emit("local.set", pa)
        c.emit("local.get", pb).emit("local.get", row_bytes).emit("i32.add").emit("local.set", pb)

    counted_loop(c, p, lambda: c.emit("local.get", arg["k"]), inner)
    c.emit("local.get", crow).emit("local.get", j).emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add").emit("local.get", acc)
    if relu:
        if vector:
            c.emit("v128.const", bytes(16)).emit("f32x4.max")
        else:
            c.emit("f32.const", 0.0).emit("f32.max")
    c.emit("v128.store" if vector else "f32.store", 2)
    c.emit("local.get", j).emit("i32.const", width).emit("i32.add").emit("local.set", j)
    c.emit("br", 0).emit("end").emit("end")
