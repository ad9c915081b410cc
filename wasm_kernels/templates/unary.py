"""The elementwise unary family: y[i] = f(x[i]) over n floats, one register at a time, then
a scalar tail. ``f`` is the kernel's ABI formula, as ``activations.unary`` builds it."""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from . import activations
from .isa import ISAS
from .loops import strided_loop


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate unary kernel ``spec`` (``f32_<op>``) for ``isa_name``."""
    c = Code(spec.param_types)
    x, y, n = range(3)
    i = c.local("i32")
    c.emit("i32.const", 0).emit("local.set", i)
    for isa in dict.fromkeys((ISAS[isa_name], ISAS["scalar"])):
        def body(isa=isa) -> None:
            # y + 4i <- f(x + 4i)
            c.emit("local.get", y).emit("local.get", i).emit("i32.const", 2).emit("i32.shl")
            c.emit("i32.add")
            c.emit("local.get", x).emit("local.get", i).emit("i32.const", 2).emit("i32.shl")
            c.emit("i32.add")
            isa.load(c)
            activations.apply(c, isa, spec.op)
            isa.store(c)

        strided_loop(c, i, isa.lanes, n, body)
    return FuncType(spec.param_types, spec.results), c
