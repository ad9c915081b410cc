"""The linear family: C(m, n) = epilogue(A(m, k) @ W(n, k).T [+ bias] [+ R]), row-major f32.

W is ``nn.Linear``'s weight, packed at compile time (``wasm_kernels.pack``): row ``j`` holds
the ``k`` weights of output column ``j``, so A and W are both read along k, contiguously,
and every register of either is one vector load (no broadcasts, which cranelift lowers
through a shuffle per use). The micro-kernel is a tile of dot products: ``MR`` rows of A
against a panel of ``PANEL`` rows of W, whose registers for one step of k sit side by side
behind one pointer; its ``MR * PANEL`` vector accumulators are reduced across lanes once
per tile, the ``k % GROUP`` last steps run scalar, and the sums are reassembled into one
register per row, so the epilogue runs in SIMD.

Every variant multiplies and adds separately, the relaxed one included: cranelift lowers
``f32x4.relaxed_madd`` to ``vfmadd213ps``, whose destination is a multiplicand, so each
multiply-add of the tile costs a copy of a shared A or W register and a move of its
accumulator per step (34 instructions per step against 28), and the fused tile measured
~5% slower (bench/README.md). Columns after the last panel are single
dot products with a scalar epilogue.

The driver blocks W by rows so a block stays in L2 (``BLOCK_BYTES``): within a block, row
tiles of A (``MR`` rows, then single rows) stay in L1 while the block's panels, then its
single rows, stream past them.

Rows of the family: ``f32_linear[_bias][_add][_<activation>]``.
"""


from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from ..abi import KernelSpec
from ..pack import GROUP, PANEL
from ..wasm import Code, FuncType
from . import activations
from .isa import ISAS, Isa, KernelFrame
from .loops import strided_loop

MR = 2
"""Rows of A per tile. Against a panel of ``PANEL`` (4) rows of W: 8 accumulators, 2 A and
4 W registers (14 of the 16 XMM registers), 6 loads per 8 multiply-adds."""

BLOCK_BYTES = 1 << 17
"""Bytes of W per block: a quarter of a 512 KiB L2, so it stays there while A streams by."""


@dataclass
class _Frame(KernelFrame):
    """Locals shared by the driver and the micro-kernels of one generated function."""

    i: int
    j: int
    jb: int
    jend: int
    nb: int
    ld: int
    kvec: int


def variant(isa: str) -> str:
    """The variant suffix of linear kernels for ``isa``, e.g. ``relaxed_2x4``."""
    return f"{isa}_{MR}x{PANEL}"


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate linear kernel ``spec`` for ``isa_name``."""
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    f = _Frame(c, isa, arg, spec.activations, *(c.local("i32") for _ in range(7)))
    # ld = k * 4: the byte stride of A's and W's rows; kvec: its whole groups, in bytes.
    c.emit("local.get", arg["k"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.ld)
    c.emit("local.get", f.ld).emit("i32.const", -4 * GROUP).emit("i32.and")
    c.emit("local.set", f.kvec)
    # nb = max(PANEL, BLOCK_BYTES / ld rounded down to PANEL): W rows per block (ld | 1 avoids 0).
    c.emit("i32.const", BLOCK_BYTES).emit("local.get", f.ld).emit("i32.const", 1).emit("i32.or")
    c.emit("i32.div_u").emit("i32.const", -PANEL).emit("i32.and").emit("local.tee", f.nb)
    c.emit("i32.const", PANEL).emit("local.get", f.nb).emit("i32.const", PANEL).emit("i32.gt_u")
    c.emit("select").emit("local.set", f.nb)

    def block() -> None:
        # jend = min(jb + nb, n)
        c.emit("local.get", f.jb).emit("local.get", f.nb).emit("i32.add").emit("local.tee", f.jend)
        c.emit("local.get", arg["n"]).emit("local.get", f.jend).emit("local.get", arg["n"])
        c.emit("i32.lt_u").emit("select").emit("local.set", f.jend)
        c.emit("i32.const", 0).emit("local.set", f.i)
        for rows in (MR, 1):
            strided_loop(c, f.i, rows, arg["m"], partial(_row_tiles, f, rows))
        c.emit("local.get", f.jb).emit("local.get", f.nb).emit("i32.add").emit("local.set", f.jb)

    c.emit("i32.const", 0).emit("local.set", f.jb)
    c.emit("block").emit("loop")
    c.emit("local.get", f.jb).emit("local.get", arg["n"]).emit("i32.ge_u").emit("br_if", 1)
    block()
    c.emit("br", 0).emit("end").emit("end")
    return FuncType(spec.param_types, spec.results), c


def _row_tiles(f: _Frame, rows: int) -> None:
    """Rows ``i .. i+rows`` of C against columns ``jb .. jend``: panels, then single
    columns."""
    c = f.c
    c.emit("local.get", f.jb).emit("local.set", f.j)
    for cols in (PANEL, 1):
        strided_loop(c, f.j, cols, f.jend, partial(_tile, f, rows, cols))


def _row_pointer(c: Code, base: int, row: int, r: int, ld: int) -> None:
    """Push ``base + (row + r) * ld``."""
    c.emit("local.get", base).emit("local.get", row)
    if r:
        c.emit("i32.const", r).emit("i32.add")
    c.emit("local.get", ld).emit("i32.mul").emit("i32.add")


def _tile(f: _Frame, rows: int, cols: int) -> None:
    """The micro-kernel: C[i:i+rows, j:j+cols] as ``rows * cols`` dot products over k.

    A tile of ``PANEL`` columns reads one panel of the packed W (``wasm_kernels.pack``);
    a single column reads one of the row-major rows after the last panel.
    """
    c, isa, arg = f.c, f.isa, f.arg
    scalar = ISAS["scalar"]
    acc = [[c.local(isa.valtype) for _ in range(cols)] for _ in range(rows)]
    pa = [c.local("i32") for _ in range(rows)]
    pw, kk = c.local("i32"), c.local("i32")
    biased = [c.local("i32") for _ in range(rows + 1)]
    # W's bytes per byte of an A row: a panel interleaves PANEL rows.
    w_scale = PANEL if cols == PANEL else 1
    for r in range(rows):
        _row_pointer(c, arg["a"], f.i, r, f.ld)
        c.emit("local.set", pa[r])
    _row_pointer(c, arg["w"], f.j, 0, f.ld)
    c.emit("local.set", pw)
    for row in acc:
        for value in row:
            isa.const(c, 0.0)
            c.emit("local.set", value)

    def k_loop(step: Isa, accs: list[list[int]], start: int | None, limit: int,
               group: int) -> None:
        """``accs[r][v] += A[r, kk] * W[v, kk]`` for A byte offsets ``start <= kk < limit``,
        ``group`` floats of each row per loop step (W's group in a panel).

        NOTE: the pointers are biased by ``limit`` and ``kk`` counts up to 0, so the loop
        test is the flags of one add, and each address is a fresh 32-bit add, which
        cranelift uses without the zero-extending move a loop-carried pointer needs.
        """
        for pointer, scale, end in zip(pa + [pw], [1] * rows + [w_scale], biased):
            c.emit("local.get", pointer).emit("local.get", limit)
            if scale > 1:
                c.emit("i32.const", scale).emit("i32.mul")
            c.emit("i32.add").emit("local.set", end)
        if start is None:
            c.emit("i32.const", 0)
        else:
            c.emit("local.get", start)
        c.emit("local.get", limit).emit("i32.sub").emit("local.tee", kk)
        # Entered if kk != 0, tested at the bottom: one branch per step.
        c.emit("if").emit("loop")
        a = [c.local(step.valtype) for _ in range(rows)]
        w = [c.local(step.valtype) for _ in range(cols)]
        for lane in range(0, group, step.lanes):
            for r in range(rows):
                c.emit("local.get", biased[r]).emit("local.get", kk).emit("i32.add")
                step.load(c, 4 * lane)
                c.emit("local.set", a[r])
            for v in range(cols):
                c.emit("local.get", biased[rows]).emit("local.get", kk)
                if w_scale > 1:
                    c.emit("i32.const", w_scale.bit_length() - 1).emit("i32.shl")
                c.emit("i32.add")
                step.load(c, 4 * (v * group + lane))
                c.emit("local.set", w[v])
            for r in range(rows):
                for v in range(cols):
                    c.emit("local.get", w[v]).emit("local.get", a[r])
                    step.madd_into(c, accs[r][v])
        c.emit("local.get", kk).emit("i32.const", 4 * group).emit("i32.add")
        c.emit("local.tee", kk).emit("br_if", 0)
        c.emit("end").emit("end")

    k_loop(replace(isa, fma=False), acc, None, f.kvec, GROUP)
    sums = acc
    if isa.vector:
        sums = [[c.local("f32") for _ in range(cols)] for _ in range(rows)]
        for r in range(rows):
            for v in range(cols):
                _lane_sum(c, isa, acc[r][v])
                c.emit("local.set", sums[r][v])
    k_loop(scalar, sums, f.kvec, f.ld, 1)  # the k % GROUP steps left
    if cols == isa.lanes:
        for r in range(rows):
            for v in range(cols):
                c.emit("local.get", sums[r][v])
                if v == 0:
                    isa.splat(c)
                else:
                    c.emit("f32x4.replace_lane", v)
            _store(f, isa, r, 0)
    else:
        for r in range(rows):
            for v in range(cols):
                c.emit("local.get", sums[r][v])
                _store(f, scalar, r, v)


def _lane_sum(c: Code, isa: Isa, register: int) -> None:
    """Push the sum of the lanes of ``register``: (l0 + l1) + (l2 + l3)."""
    for lane in range(isa.lanes):
        c.emit("local.get", register).emit("f32x4.extract_lane", lane)
        if lane % 2:
            c.emit("f32.add")
        if lane == 3:
            c.emit("f32.add")


def _store(f: _Frame, isa: Isa, r: int, v: int) -> None:
    """Apply the epilogue to the register on the stack and store it at C[i + r, j + v]."""
    c, arg = f.c, f.arg
    value = c.local(isa.valtype)
    c.emit("local.set", value)

    def address(base: int, row: bool) -> None:
        # base + ((i + r) * n + j) * 4, or base + j * 4 for the bias row.
        c.emit("local.get", base)
        if row:
            c.emit("local.get", f.i)
            if r:
                c.emit("i32.const", r).emit("i32.add")
            c.emit("local.get", arg["n"]).emit("i32.mul")
        c.emit("local.get", f.j)
        if row:
            c.emit("i32.add")
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")

    address(arg["c"], row=True)
    c.emit("local.get", value)
    for name, row in (("bias", False), ("r", True)):
        if name in arg:
            address(arg[name], row)
            isa.load(c, 4 * v)
            isa.op(c, "add")
    for op in f.epilogue:
        activations.apply(c, isa, op)
    isa.store(c, 4 * v)
