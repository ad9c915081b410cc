"""The gemm family: C(m, n) = epilogue(A(m, k) @ B(k, n) [+ bias]), row-major f32.

A register-blocked micro-kernel computes an ``MR x NR`` tile of C with its accumulators in
locals: per step of k it loads one row of the B panel (``NR / lanes`` registers), broadcasts
one A element per tile row, and multiply-adds ``MR * NR / lanes`` accumulators. The k loop
is not unrolled: cranelift schedules all loads of a loop body first, and a second step's
registers would spill the accumulators. The driver walks row
blocks of ``MR`` rows (then single rows) and, within them, column panels of ``NR``
columns, then one register of columns, then single columns, so every ``m, k, n`` is exact.

Rows of the family: ``f32_gemm[_bias][_<epilogue>...]`` and the batched ``f32_bmm`` and
``f32_bmm_bias``, which loop the same body over ``batch`` with per-operand batch strides.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from . import activations
from .isa import ISAS, Isa, KernelFrame
from .loops import strided_loop

TILES: dict[str, tuple[int, int]] = {"relaxed": (4, 8), "simd128": (4, 8), "scalar": (4, 2)}
"""(MR, NR): tile rows and columns per ISA. 4x8 keeps 8 f32x4 accumulators, 2 B registers
and one broadcast A register within the 16 XMM registers; larger tiles spill."""

@dataclass
class _Frame(KernelFrame):
    """Locals shared by the driver and the micro-kernels of one generated function."""

    i: int
    j: int
    lda: int
    ldc: int
    pb: int


def variant(isa: str) -> str:
    """The variant suffix of gemm kernels for ``isa``, e.g. ``relaxed_4x8``."""
    mr, nr = TILES[isa]
    return f"{isa}_{mr}x{nr}"


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate gemm or bmm kernel ``spec`` for ``isa_name``."""
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    i32 = "i32"
    f = _Frame(c, isa, arg, spec.activations, *(c.local(i32) for _ in range(5)))
    # lda = k * 4, ldc = n * 4 (byte strides).
    c.emit("local.get", arg["k"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.lda)
    c.emit("local.get", arg["n"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.ldc)
    if "batch" in arg:
        _batched(f)
    else:
        _gemm(f)
    return FuncType(spec.param_types, spec.results), c


def _batched(f: _Frame) -> None:
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


def _gemm(f: _Frame) -> None:
    """Column panels of NR columns, then one register, then single columns; within each,
    row blocks of MR rows, then single rows. Panels outermost keep a k x NR slice of B
    in L1 while A streams through it."""
    mr, nr = TILES[f.isa.name]
    c, n = f.c, f.arg["n"]
    panels = [(f.isa, nr, nr // f.isa.lanes)]
    if f.isa.vector:
        panels.append((f.isa, f.isa.lanes, 1))
    panels.append((ISAS["scalar"], 1, 1))
    c.emit("i32.const", 0).emit("local.set", f.j)
    for isa, width, regs in panels:
        def panel(isa: Isa = isa, regs: int = regs) -> None:
            c.emit("i32.const", 0).emit("local.set", f.i)
            strided_loop(c, f.i, mr, f.arg["m"], lambda: _tile(f, isa, mr, regs))
            strided_loop(c, f.i, 1, f.arg["m"], lambda: _tile(f, isa, 1, regs))

        strided_loop(c, f.j, width, n, panel)


def _address(c: Code, base: int, row: int, r: int, row_bytes: int, col: int | None) -> None:
    """Push ``base + (row + r) * row_bytes [+ col * 4]``."""
    c.emit("local.get", base).emit("local.get", row)
    if r:
        c.emit("i32.const", r).emit("i32.add")
    c.emit("local.get", row_bytes).emit("i32.mul").emit("i32.add")
    if col is not None:
        c.emit("local.get", col).emit("i32.const", 2).emit("i32.shl").emit("i32.add")


def _tile(f: _Frame, isa: Isa, rows: int, regs: int) -> None:
    """The micro-kernel: C[i:i+rows, j:j+regs*lanes] with ``rows * regs`` accumulators."""
    c, arg, width = f.c, f.arg, 4 * isa.lanes
    acc = [[c.local(isa.valtype) for _ in range(regs)] for _ in range(rows)]
    bv = [c.local(isa.valtype) for _ in range(regs)]
    av = c.local(isa.valtype)
    pa = [c.local("i32") for _ in range(rows)]
    kk = c.local("i32")
    # pa[r]: the end of row i + r of A, so that A[i + r, k] is at pa[r] + kk for a kk
    # counting up to 0 (bytes): the loop test is the flags of one add, and each A address
    # is a fresh 32-bit add, which cranelift uses without a zero-extending move.
    for r in range(rows):
        _address(c, arg["a"], f.i, r + 1, f.lda, None)
        c.emit("local.set", pa[r])
    c.emit("local.get", arg["b"]).emit("local.get", f.j).emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add").emit("local.set", f.pb)
    for v in range(regs):
        if "bias" in arg:
            c.emit("local.get", arg["bias"]).emit("local.get", f.j).emit("i32.const", 2)
            c.emit("i32.shl").emit("i32.add")
            isa.load(c, v * width)
        else:
            isa.const(c, 0.0)
        c.emit("local.set", acc[0][v])
        for r in range(1, rows):
            c.emit("local.get", acc[0][v]).emit("local.set", acc[r][v])
    # Entered if k != 0, tested at the bottom: one branch per step.
    c.emit("i32.const", 0).emit("local.get", f.lda).emit("i32.sub").emit("local.tee", kk)
    c.emit("if").emit("loop")
    for v in range(regs):
        c.emit("local.get", f.pb)
        isa.load(c, v * width)
        c.emit("local.set", bv[v])
    c.emit("local.get", f.pb).emit("local.get", f.ldc).emit("i32.add").emit("local.set", f.pb)
    for r in range(rows):
        c.emit("local.get", pa[r]).emit("local.get", kk).emit("i32.add")
        isa.load_splat(c)
        c.emit("local.set", av)
        for v in range(regs):
            # NOTE: mul + add on every ISA. cranelift turns relaxed_madd into vfmadd213ps,
            # which overwrites a multiplicand and leaves each sum outside its accumulator:
            # 47 instructions per k step against 35, and 2-9% slower at attention's shapes.
            c.emit("local.get", av).emit("local.get", bv[v])
            isa.op(c, "mul")
            c.emit("local.get", acc[r][v])
            isa.op(c, "add")
            c.emit("local.set", acc[r][v])
    c.emit("local.get", kk).emit("i32.const", 4).emit("i32.add").emit("local.tee", kk)
    c.emit("br_if", 0).emit("end").emit("end")
    for r in range(rows):
        for v in range(regs):
            _address(c, arg["c"], f.i, r, f.ldc, f.j)
            c.emit("local.get", acc[r][v])
            if "r" in arg:
                _address(c, arg["r"], f.i, r, f.ldc, f.j)
                isa.load(c, v * width)
                isa.op(c, "add")
            for op in f.epilogue:
                activations.apply(c, isa, op)
            isa.store(c, v * width)
