"""The gather family: rows of a (rows, dim) table of floats (``f32_gather``) or bytes
(``u8_gather``) picked by int64 indices.

Each index is checked against ``rows`` as an unsigned 64-bit number (so negative indices
fail too) before its row is touched; a bad index traps with ``unreachable``. A row is one
``memory.copy``.
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .loops import strided_loop


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate gather kernel ``spec`` (the same code for every ISA)."""
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    i, row_bytes, index = c.local("i32"), c.local("i32"), c.local("i64")
    c.emit("local.get", arg["dim"])
    if spec.dtypes[0] == "float32":
        c.emit("i32.const", 2).emit("i32.shl")
    c.emit("local.set", row_bytes)
    c.emit("i32.const", 0).emit("local.set", i)

    def body() -> None:
        # index = index[i]; trap unless index <u rows
        c.emit("local.get", arg["index"]).emit("local.get", i).emit("i32.const", 3)
        c.emit("i32.shl").emit("i32.add").emit("i64.load", 3).emit("local.tee", index)
        c.emit("local.get", arg["rows"]).emit("i64.extend_i32_u").emit("i64.ge_u")
        c.emit("if").emit("unreachable").emit("end")
        # memory.copy(y + i * row_bytes, table + index * row_bytes, row_bytes)
        c.emit("local.get", arg["y"]).emit("local.get", i).emit("local.get", row_bytes)
        c.emit("i32.mul").emit("i32.add")
        c.emit("local.get", arg["table"]).emit("local.get", index).emit("i32.wrap_i64")
        c.emit("local.get", row_bytes).emit("i32.mul").emit("i32.add")
        c.emit("local.get", row_bytes).emit("memory.copy")

    strided_loop(c, i, 1, arg["count"], body)
    return FuncType(spec.param_types, spec.results), c
