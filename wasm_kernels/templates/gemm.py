"""The gemm family: C(m, n) = epilogue(A(m, k) @ B(k, n) [+ bias] [+ R]), row-major f32.

Tiles are ``dense_tile``'s outer products, reading B where it lies: a tile's step of k is
one row of B, ``width`` floats, and the next step is a row stride further. The driver walks
column panels of ``NR`` columns, then one register of columns, then single columns; within
each, row blocks of ``MR`` rows, then single rows, so every ``m, k, n`` is exact and no load
reads past B's last row. Panels outermost keep a k x ``NR`` slice of B in cache while A
streams through it.

Rows of the family: ``f32_gemm[_bias][_add][_<epilogue>...]`` and the batched ``f32_bmm`` and
``f32_bmm_bias``, which loop the same body over ``batch`` with per-operand batch strides.
"""

from __future__ import annotations

from functools import partial

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .dense_tile import DenseFrame, tile
from .isa import ISAS, Isa
from .loops import strided_loop

TILES: dict[str, tuple[int, int]] = {"relaxed": (3, 8), "simd128": (3, 8), "scalar": (4, 2)}
"""(MR, NR): tile rows and columns per ISA (see ``dense_tile``: 3x8 is what fits in the 16
XMM registers without a spill)."""


def variant(isa: str) -> str:
    """The variant suffix of gemm kernels for ``isa``, e.g. ``relaxed_4x8``."""
    mr, nr = TILES[isa]
    return f"{isa}_{mr}x{nr}"


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate gemm or bmm kernel ``spec`` for ``isa_name``."""
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    f = DenseFrame(c, ISAS[isa_name], arg, spec.activations,
                   *(c.local("i32") for _ in range(5)))
    # lda = k * 4, ldb = ldc = n * 4 (byte strides).
    c.emit("local.get", arg["k"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.lda)
    c.emit("local.get", arg["n"]).emit("i32.const", 2).emit("i32.shl").emit("local.tee", f.ldc)
    c.emit("local.set", f.ldb)
    if "batch" in arg:
        _batched(f)
    else:
        _gemm(f)
    return FuncType(spec.param_types, spec.results), c


def _batched(f: DenseFrame) -> None:
    """``for batch: gemm; a += a_stride; b += b_stride; c += m * n``, strides in floats; a
    bias row advances by n floats after every ``bias_every`` batches."""
    c, arg = f.c, f.arg
    if "bias" in arg:
        left = c.local("i32")  # batches until the bias moves to its next row
        c.emit("local.get", arg["bias_every"]).emit("local.set", left)
    c.emit("block").emit("loop")
    c.emit("local.get", arg["batch"]).emit("i32.eqz").emit("br_if", 1)
    _gemm(f)
    for pointer, stride in (("a", "a_stride"), ("b", "b_stride")):
        c.emit("local.get", arg[pointer]).emit("local.get", arg[stride]).emit("i32.const", 2)
        c.emit("i32.shl").emit("i32.add").emit("local.set", arg[pointer])
    for pointer in ("c",) + (("r",) if "r" in arg else ()):
        c.emit("local.get", arg[pointer]).emit("local.get", arg["m"]).emit("local.get", f.ldc)
        c.emit("i32.mul").emit("i32.add").emit("local.set", arg[pointer])
    if "bias" in arg:
        c.emit("local.get", left).emit("i32.const", 1).emit("i32.sub").emit("local.tee", left)
        c.emit("i32.eqz").emit("if")
        c.emit("local.get", arg["bias"]).emit("local.get", f.ldc).emit("i32.add")
        c.emit("local.set", arg["bias"])
        c.emit("local.get", arg["bias_every"]).emit("local.set", left)
        c.emit("end")
    c.emit("local.get", arg["batch"]).emit("i32.const", 1).emit("i32.sub")
    c.emit("local.set", arg["batch"])
    c.emit("br", 0).emit("end").emit("end")


def _gemm(f: DenseFrame) -> None:
    """Column panels of NR columns, then one register, then single columns; within each,
    row blocks of MR rows, then single rows."""
    mr, nr = TILES[f.isa.name]
    c, n = f.c, f.arg["n"]
    panels = [(f.isa, nr)]
    if f.isa.vector:
        panels.append((f.isa, f.isa.lanes))
    panels.append((ISAS["scalar"], 1))
    c.emit("i32.const", 0).emit("local.set", f.j)
    for isa, width in panels:
        def panel(isa: Isa = isa, width: int = width) -> None:
            c.emit("i32.const", 0).emit("local.set", f.i)
            for rows in (mr, 1):
                strided_loop(c, f.i, rows, f.arg["m"],
                             partial(tile, f, isa, rows, width, partial(_column, f)))

        strided_loop(c, f.j, width, n, panel)


def _column(f: DenseFrame) -> None:
    """Push the address of B's column ``j``: ``b + j * 4``."""
    f.c.emit("local.get", f.arg["b"]).emit("local.get", f.j).emit("i32.const", 2)
    f.c.emit("i32.shl").emit("i32.add")
