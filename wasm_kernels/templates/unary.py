"""The elementwise unary family: y[i] = f(x[i]) over n floats, 4 lanes at a time then a
scalar tail. Each op is one row: how to apply it to an f32x4 and to an f32 on the stack."""

from __future__ import annotations

from typing import Callable

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .loops import counted_loop

LANES = 4

# op -> (vector body, scalar body); each applies f to the value on top of the stack.
OPS: dict[str, tuple[Callable[[Code], object], Callable[[Code], object]]] = {
    "relu": (lambda c: c.emit("v128.const", bytes(16)).emit("f32x4.max"),
             lambda c: c.emit("f32.const", 0.0).emit("f32.max")),
}


def emit(spec: KernelSpec, isa: str) -> tuple[FuncType, Code]:
    """Generate unary kernel ``spec`` (``f32_<op>``) for ``isa``."""
    vector_op, scalar_op = OPS[spec.name.removeprefix("f32_")]
    c = Code(spec.param_types)
    x, y, n = range(3)
    i, blocks = c.local("i32"), c.local("i32")

    def address(base: int, scale: int) -> None:
        c.emit("local.get", base).emit("local.get", i).emit("i32.const", scale)
        c.emit("i32.mul").emit("i32.add")

    if isa != "scalar":
        c.emit("local.get", n).emit("i32.const", 2).emit("i32.shr_u").emit("local.set", blocks)

        def vector_body() -> None:
            address(y, 16)
            address(x, 16)
            c.emit("v128.load", 0)
            vector_op(c)
            c.emit("v128.store", 0)

        counted_loop(c, i, lambda: c.emit("local.get", blocks), vector_body)
        # Continue the scalar loop at element 4 * blocks.
        c.emit("local.get", blocks).emit("i32.const", 2).emit("i32.shl").emit("local.set", blocks)
    else:
        c.emit("i32.const", 0).emit("local.set", blocks)

    def scalar_body() -> None:
        address(y, 4)
        address(x, 4)
        c.emit("f32.load", 2)
        scalar_op(c)
        c.emit("f32.store", 2)

    counted_loop(c, i, lambda: c.emit("local.get", n), scalar_body, start_local=blocks)
    return FuncType(spec.param_types, spec.results), c
